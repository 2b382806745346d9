import t, { type Test } from 'tap';
import {
  TELEGRAM_TEXT_LIMIT,
  markdownToTelegramHtml,
  splitForTelegram,
  streamingPreview,
  visibleLength,
  type TelegramChunk,
} from '../../edges/telegram/telegram-format.js';

const TAGS = new Set(['b', 'i', 'u', 's', 'code', 'pre', 'a', 'blockquote', 'tg-spoiler']);

/**
 * What Telegram's HTML parser would refuse: a tag it does not know, a tag closed out of order or
 * left open, or a bare `<`, `>` or `&` in text. Empty when the HTML is fine.
 */
function htmlProblems(html: string): string[] {
  const problems: string[] = [];
  const open: string[] = [];
  const token = /<(\/?)([a-z-]+)((?:\s+[a-z-]+="[^"<>]*")*)\s*>|[<>]|&(?!(?:lt|gt|amp|quot);)/g;
  for (const m of html.matchAll(token)) {
    const name = m[2];
    if (!name) problems.push(`bare ${m[0]} at ${m.index}`);
    else if (!TAGS.has(name)) problems.push(`unknown tag ${m[0]}`);
    else if (m[1]) {
      const top = open.pop();
      if (top !== name) problems.push(`</${name}> closes <${top ?? 'nothing'}>`);
    } else open.push(name);
  }
  for (const name of open) problems.push(`<${name}> never closed`);
  return problems;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const squash = (s: string) => s.replace(/\s+/g, '');

/** Every chunk fits both ways, parses and holds whole characters; returns the chunks for further checks. */
function checkChunks(t: Test, chunks: TelegramChunk[], limit = TELEGRAM_TEXT_LIMIT): TelegramChunk[] {
  const wrong: string[] = [];
  for (const [n, c] of chunks.entries()) {
    if (c.plain.length > limit) wrong.push(`chunk ${n}: plain ${c.plain.length} > ${limit}`);
    if (visibleLength(c.html) > limit) wrong.push(`chunk ${n}: visible ${visibleLength(c.html)} > ${limit}`);
    for (const p of htmlProblems(c.html)) wrong.push(`chunk ${n}: ${p}`);
    if (LONE_SURROGATE.test(c.plain) || LONE_SURROGATE.test(c.html)) wrong.push(`chunk ${n}: half a character`);
    if (c.html !== markdownToTelegramHtml(c.plain)) wrong.push(`chunk ${n}: html is not its plain rendered`);
  }
  t.same(wrong, [], `${chunks.length} chunks fit ${limit}, parse and hold whole characters`);
  return chunks;
}

await t.test('the tag checker itself catches what Telegram refuses', async (t) => {
  t.same(htmlProblems('<b>x <i>y</i></b> &amp; <a href="https://a">z</a>'), []);
  t.equal(htmlProblems('<b><i>x</b></i>').length, 2);
  t.equal(htmlProblems('<b>x').length, 1);
  t.equal(htmlProblems('a < b').length, 1);
  t.equal(htmlProblems('a & b').length, 1);
  t.equal(htmlProblems('<div>x</div>').length, 2);
});

await t.test('given text with <, > and &, when rendered, then they are escaped in text, code and links', async (t) => {
  t.equal(markdownToTelegramHtml('a < b && c > d'), 'a &lt; b &amp;&amp; c &gt; d');
  t.equal(markdownToTelegramHtml('run `if (a < b && c > d)` now'), 'run <code>if (a &lt; b &amp;&amp; c &gt; d)</code> now');
  t.equal(markdownToTelegramHtml('```\n<div>&nbsp;</div>\n```'), '<pre>&lt;div&gt;&amp;nbsp;&lt;/div&gt;</pre>');
  t.equal(
    markdownToTelegramHtml('[a <b> & c](https://x.test/?q=1&r="2")'),
    '<a href="https://x.test/?q=1&amp;r=&quot;2&quot;">a &lt;b&gt; &amp; c</a>',
  );
  t.equal(markdownToTelegramHtml('<script>alert(1)</script>'), '&lt;script&gt;alert(1)&lt;/script&gt;');
});

await t.test('given fenced code with a language, when rendered, then it is a pre/code block of that language', async (t) => {
  t.equal(markdownToTelegramHtml('Look:\n```ts\nconst a = 1;\n  b();\n```\ndone'), 'Look:\n<pre><code class="language-ts">const a = 1;\n  b();</code></pre>\ndone');
  t.equal(markdownToTelegramHtml('~~~python\nprint(1)\n~~~'), '<pre><code class="language-python">print(1)</code></pre>');
  t.equal(markdownToTelegramHtml('```\nplain **not bold**\n```'), '<pre>plain **not bold**</pre>');
  // The language lands in an attribute: nothing in it may end the attribute.
  const hostile = markdownToTelegramHtml('```ts"><b>x\ny\n```');
  t.same(htmlProblems(hostile), []);
  t.notMatch(hostile, /<b>/);
});

await t.test('given nested emphasis, when rendered, then bold and italic nest', async (t) => {
  t.equal(markdownToTelegramHtml('**bold *both* bold**'), '<b>bold <i>both</i> bold</b>');
  t.equal(markdownToTelegramHtml('*it **both** it*'), '<i>it <b>both</b> it</i>');
  t.equal(markdownToTelegramHtml('***both***'), '<b><i>both</i></b>');
  t.equal(markdownToTelegramHtml('__b__ and _i_ and ~~s~~'), '<b>b</b> and <i>i</i> and <s>s</s>');
  t.equal(markdownToTelegramHtml('**a `*x*` b**'), '<b>a <code>*x*</code> b</b>');
});

await t.test('given markdown that does not balance, when rendered, then it stays literal and the HTML still parses', async (t) => {
  t.equal(markdownToTelegramHtml('this is **not closed'), 'this is **not closed');
  t.equal(markdownToTelegramHtml('2 * 3 * 4 and a ** b'), '2 * 3 * 4 and a ** b');
  t.equal(markdownToTelegramHtml('snake_case_name'), 'snake_case_name');
  t.equal(markdownToTelegramHtml('\\*escaped\\*'), '*escaped*');
  t.equal(markdownToTelegramHtml('an `open code span'), 'an `open code span');
  const ugly = [
    '**a *b** c*',
    '***x** y*',
    '*a **b* c**',
    '[**link](https://a.test) text**',
    '[a [b](https://x) c](https://y)',
    '> **quoted\nnot quoted**',
    '# *heading',
    '- **item\n- other**',
    '`a**`b**',
    '~~a **b~~ c**',
    '<https://a.test/<b>>',
    '*'.repeat(9) + 'x' + '_'.repeat(7),
    '**'.repeat(3000) + 'x',
    '*a '.repeat(3000),
    '[x'.repeat(2000),
  ];
  for (const md of ugly) t.same(htmlProblems(markdownToTelegramHtml(md)), [], md.slice(0, 40));
});

await t.test('given links, when rendered, then only http(s), tg and mailto become links', async (t) => {
  t.equal(markdownToTelegramHtml('[click](javascript:alert(1))'), '[click](javascript:alert(1))');
  t.equal(markdownToTelegramHtml('[x](JavaScript:alert(1))'), '[x](JavaScript:alert(1))');
  t.equal(markdownToTelegramHtml('[img](data:text/html,hi)'), '[img](data:text/html,hi)');
  t.equal(markdownToTelegramHtml('[file](src/a.ts)'), '[file](src/a.ts)');
  t.equal(markdownToTelegramHtml('[site](https://a.test/x_(y))'), '<a href="https://a.test/x_(y)">site</a>');
  t.equal(markdownToTelegramHtml('[me](tg://user?id=1) [mail](mailto:a@b.test)'), '<a href="tg://user?id=1">me</a> <a href="mailto:a@b.test">mail</a>');
  t.equal(markdownToTelegramHtml('<https://a.test> <javascript:x>'), '<a href="https://a.test">https://a.test</a> &lt;javascript:x&gt;');
  t.equal(markdownToTelegramHtml('[**b**](http://a.test "title")'), '<a href="http://a.test"><b>b</b></a>');
});

await t.test('given headings, lists and quotes, when rendered, then they become bold lines, bullets and blockquotes', async (t) => {
  t.equal(markdownToTelegramHtml('## Plan ##\n- one\n* two\n  + three\n1. four'), '<b>Plan</b>\n• one\n• two\n  • three\n1. four');
  t.equal(markdownToTelegramHtml('> first *x*\n> - item\nafter'), '<blockquote>first <i>x</i>\n• item</blockquote>\nafter');
  t.equal(markdownToTelegramHtml('#hashtag'), '#hashtag');
  t.equal(markdownToTelegramHtml('a\n\n---\nb'), 'a\n\n———\nb');
});

await t.test('visibleLength counts what Telegram counts: decoded text, no tags, UTF-16 units', async (t) => {
  t.equal(visibleLength('<b>a&lt;b</b> &amp; <a href="https://x">c</a>'), 7);
  t.equal(visibleLength('😀'), 2);
  t.equal(visibleLength('<pre><code class="language-ts">x</code></pre>'), 1);
});

await t.test('given empty or blank input, when split, then there is no message', async (t) => {
  t.same(splitForTelegram(''), []);
  t.same(splitForTelegram(' \n\n\t \n'), []);
});

await t.test('given a short answer, when split, then it is one message of the whole text', async (t) => {
  const md = 'Hello **there**\n\n```js\nx()\n```';
  t.same(splitForTelegram(md), [{ html: markdownToTelegramHtml(md), plain: md }]);
});

await t.test('given a 10 000-char answer of paragraphs, when split, then it is cut at blank lines and nothing is lost', async (t) => {
  const paragraphs: string[] = [];
  for (let i = 0; paragraphs.join('\n\n').length < 10_000; i++) {
    // Line breaks inside paragraphs too, so a cut at any line end would not pass for a paragraph break.
    paragraphs.push(`Paragraph ${i} with **bold** & <tags>.\n` + 'Lorem ipsum dolor sit amet.\n'.repeat(5 + (i % 7)).trimEnd());
  }
  const md = paragraphs.join('\n\n');
  t.ok(md.length >= 10_000);
  const chunks = checkChunks(t, splitForTelegram(md));
  t.ok(chunks.length >= 3, `${chunks.length} chunks`);
  for (const c of chunks.slice(0, -1)) t.ok(md.includes(c.plain + '\n\nParagraph '), 'the chunk ends where a paragraph does');
  for (const c of chunks) t.match(c.plain, /^Paragraph \d+ /, 'the chunk starts a paragraph');
  t.equal(squash(chunks.map((c) => c.plain).join('')), squash(md));
  t.ok(chunks.every((c) => c.plain.length > TELEGRAM_TEXT_LIMIT / 4), 'no tiny messages');
});

await t.test('given one long paragraph, when split, then it is cut at sentence ends', async (t) => {
  const md = 'This sentence is short. And this one ends too! '.repeat(150).trim();
  const chunks = checkChunks(t, splitForTelegram(md));
  t.ok(chunks.length >= 2);
  for (const c of chunks.slice(0, -1)) t.match(c.plain, /[.!]$/);
  t.equal(squash(chunks.map((c) => c.plain).join('')), squash(md));
});

await t.test('given lines without blank lines, when split, then it is cut at line ends', async (t) => {
  const md = Array.from({ length: 300 }, (_, i) => `line ${i} of the log, no full stop here`).join('\n');
  const chunks = checkChunks(t, splitForTelegram(md, 1000));
  for (const c of chunks) t.match(c.plain, /^line \d+ of the log, no full stop here$/m);
  t.same(chunks.flatMap((c) => c.plain.split('\n')), md.split('\n'));
});

await t.test('given a 9 000-char code block, when split, then each piece is its own fenced block rendering as code', async (t) => {
  const lines = Array.from({ length: 200 }, (_, i) => `  const v${i} = compute(${i}) < limit && ok; // <note> ${'x'.repeat(i % 9)}`);
  const body = lines.join('\n');
  t.ok(body.length >= 9000, `${body.length} chars`);
  const md = `Here:\n\n\`\`\`ts\n${body}\n\`\`\`\n\nThat is all.`;
  const chunks = checkChunks(t, splitForTelegram(md));
  const code = chunks.filter((c) => c.plain.startsWith('```'));
  t.ok(code.length >= 3, `${code.length} code pieces`);
  for (const c of code) {
    t.match(c.plain, /^```ts\n[\s\S]*\n```$/);
    t.match(c.html, /^<pre><code class="language-ts">[^<]*<\/code><\/pre>$/);
  }
  t.same(code.flatMap((c) => c.plain.split('\n').slice(1, -1)), lines, 'every line once, none cut');
  t.equal(chunks[0]!.plain, 'Here:');
  t.equal(chunks.at(-1)!.plain, 'That is all.');
});

await t.test('given a code block that fits, when split, then it is never cut inside', async (t) => {
  const intro = 'Intro words here. '.repeat(20);
  const block = '```sh\n' + Array.from({ length: 20 }, (_, i) => `echo step ${i}`).join('\n') + '\n```';
  const md = `${intro}\n\n${block}\n\nafter the block.`;
  const chunks = checkChunks(t, splitForTelegram(md, 600), 600);
  t.ok(chunks.length >= 2);
  t.ok(chunks.some((c) => c.plain.includes(block)), 'the block is whole in one message');
});

await t.test('given a single 5 000-char word, when split, then it is hard-cut', async (t) => {
  const word = 'a'.repeat(5000);
  const chunks = checkChunks(t, splitForTelegram(word));
  t.same(
    chunks.map((c) => c.plain.length),
    [4096, 904],
  );
  t.equal(chunks.map((c) => c.plain).join(''), word);
});

await t.test('given emoji, when cut anywhere, then no surrogate pair or emoji sequence is split', async (t) => {
  for (const md of ['😀'.repeat(3000), 'a' + '😀'.repeat(3000), 'ab' + '👍🏽'.repeat(1500), 'x' + '👨‍👩‍👧'.repeat(900)]) {
    for (const limit of [4096, 101, 7]) {
      const chunks = checkChunks(t, splitForTelegram(md, limit), limit);
      t.equal(chunks.map((c) => c.plain).join(''), md, `${[...md][1]} at ${limit}: joined is whole`);
    }
  }
  const preview = streamingPreview('a' + '😀'.repeat(3000));
  t.notOk(LONE_SURROGATE.test(preview.plain));
  t.ok(preview.plain.endsWith('…'));
});

await t.test('given 3 000 "<", when split, then the visible length counts, not the escaped HTML', async (t) => {
  const chunks = checkChunks(t, splitForTelegram('<'.repeat(3000)));
  t.equal(chunks.length, 1);
  t.equal(visibleLength(chunks[0]!.html), 3000);
  t.equal(chunks[0]!.html.length, 12_000);
  t.ok(chunks[0]!.html.length <= 3 * TELEGRAM_TEXT_LIMIT);
  const more = checkChunks(t, splitForTelegram('<&>'.repeat(2000)));
  t.same(
    more.map((c) => visibleLength(c.html)),
    [4096, 1904],
  );
});

await t.test('given a partial answer with an open fence, when previewed, then the fence is closed', async (t) => {
  const p = streamingPreview('Working on it:\n```py\nfor x in xs:\n    print(x <');
  t.equal(p.plain, 'Working on it:\n```py\nfor x in xs:\n    print(x <\n```');
  t.equal(p.html, 'Working on it:\n<pre><code class="language-py">for x in xs:\n    print(x &lt;</code></pre>');
  t.same(htmlProblems(p.html), []);
  const done = streamingPreview('a\n```\nb\n```\n');
  t.equal(done.plain, 'a\n```\nb\n```\n', 'a closed fence is left alone');
});

await t.test('given a partial answer too long for one message, when previewed, then the beginning is kept and ends with …', async (t) => {
  const md = Array.from({ length: 800 }, (_, i) => `word${i}`).join(' ');
  const p = streamingPreview(md);
  t.ok(p.plain.length <= TELEGRAM_TEXT_LIMIT && visibleLength(p.html) <= TELEGRAM_TEXT_LIMIT);
  t.ok(p.plain.startsWith('word0 word1 '));
  t.match(p.plain, /word\d+…$/, 'cut at a word end');
  t.ok(p.plain.length > TELEGRAM_TEXT_LIMIT * 0.8, 'most of the room is used');

  const inCode = streamingPreview('```js\n' + 'call();\n'.repeat(1000));
  t.ok(inCode.plain.length <= TELEGRAM_TEXT_LIMIT && visibleLength(inCode.html) <= TELEGRAM_TEXT_LIMIT);
  t.match(inCode.plain, /^```js\ncall\(\);\n/);
  t.match(inCode.plain, /…\n```$/);
  t.match(inCode.html, /^<pre><code class="language-js">[\s\S]*…<\/code><\/pre>$/);

  const short = streamingPreview('hi **there**', 50);
  t.same(short, { html: 'hi <b>there</b>', plain: 'hi **there**' });
});
