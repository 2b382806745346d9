import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations } from '../fixtures/panel-browser.js';

/*
 * The chat page in a real browser against a real daemon and the fake CLI: a session made in the UI,
 * an answer streamed in pieces (two partial texts seen before the final one) and shown in a second
 * tab of the same user, the stored history, the read marker, an attachment that reaches the CLI,
 * an abort, and a viewer who reads but cannot write; tool badges while an answer is made, and a
 * hostile answer rendered without its script, handlers or javascript: link.
 */

// Four pieces, one every 500 ms: slow enough to see each partial text, fast enough for a test.
const REPLY = 'Alpha bravo charlie delta echo foxtrot golf hotel';

/** The page's document, typed as far as these checks need (the test's own types have no DOM). */
interface Doc {
  querySelector(s: string): { textContent: string | null } | null;
  documentElement: { scrollWidth: number };
}

type Win = { document: Doc & { body: unknown }; MutationObserver: new (cb: () => void) => { observe(n: unknown, o: unknown): void }; seen?: string[] };

/** Records every distinct text the streaming bubble shows, as it changes (polling could miss one). */
function watchBubble(page: Page) {
  return page.evaluate(() => {
    const w = globalThis as unknown as Win;
    const seen: string[] = (w.seen = []);
    new w.MutationObserver(() => {
      const s = w.document.querySelector('.chat-live .markdown')?.textContent ?? '';
      if (s && seen[seen.length - 1] !== s) seen.push(s);
    }).observe(w.document.body, { subtree: true, childList: true, characterData: true });
  });
}
const bubbleTexts = (page: Page) => page.evaluate(() => (globalThis as unknown as Win).seen ?? []);

if (SKIP_REASON) {
  t.plan(0, SKIP_REASON);
} else {
  const scratch = mkdtempSync(join(tmpdir(), 'svc-chat-panel-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const record = join(scratch, 'cli-record.jsonl');

  await t.test('chat: sessions, streaming, second tab, history, read marker, attachment, abort, viewer', async (t) => {
    const stand = await panelStand(t, { env: { FAKE_CLI_REPLY: REPLY, FAKE_CLI_CHUNKS: '4', FAKE_CLI_DELAY_MS: '500', FAKE_CLI_RECORD: record } });
    const browser = await openBrowser(t);
    const { page, context, problems } = await openPage(browser, stand);
    await logIn(page, 'admin', stand.adminPassword);

    // /chat opens the first agent; a new chat is made from the UI.
    await page.goto('/chat');
    await page.waitForURL(/\/chat\/main$/);
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.waitForURL(/session=/);
    const sessionId = new URL(page.url()).searchParams.get('session')!;
    t.ok(sessionId, 'the new session is open');
    const listed = await stand.api('GET', '/api/chat/sessions?agent=main');
    t.ok(listed.body.some((s: { id: string }) => s.id === sessionId), 'the server has the session');
    await page.getByText('No messages yet. Say hello.').waitFor();

    // The same user's second tab, on the same session.
    const other = await context.newPage();
    const otherProblems: string[] = [];
    other.on('console', (m) => {
      if (m.type() === 'error') otherProblems.push(`console: ${m.text()}`);
    });
    other.on('response', (r) => {
      if (r.status() >= 400) otherProblems.push(`http ${r.status()}: ${r.url()}`);
    });
    await other.goto(page.url());
    await other.getByText('No messages yet. Say hello.').waitFor();

    // Send; the answer streams in: two partial texts, then the final one.
    const read = page.waitForResponse((r) => r.url().endsWith(`/api/chat/sessions/${sessionId}/read`) && r.request().method() === 'POST');
    await page.getByLabel('Message').fill('Hi there');
    await watchBubble(page);
    await page.getByRole('button', { name: 'Send' }).click();
    // The first piece shows while the rest is still to come.
    await page.locator('.chat-live .markdown', { hasText: 'Alpha' }).waitFor();
    await page.locator('.chat-msg-agent:not(.chat-live)', { hasText: 'hotel' }).waitFor();
    t.equal((await page.locator('.chat-msg-agent:not(.chat-live)').last().innerText()).includes(REPLY), true, 'the final text replaces the stream');
    t.equal(await page.locator('.chat-live').count(), 0, 'no live bubble is left');
    const partial = (await bubbleTexts(page)).filter((x) => x.trim() !== REPLY);
    t.ok(partial.length >= 2, `at least two partial texts were shown before the final one: ${JSON.stringify(partial)}`);
    t.ok(partial.every((x) => REPLY.startsWith(x.trim())), 'each a beginning of the answer');

    // The other tab saw it too, and the stored history has both messages.
    await other.locator('.chat-msg-agent:not(.chat-live)', { hasText: 'hotel' }).waitFor();
    await other.locator('.chat-msg-user', { hasText: 'Hi there' }).waitFor();
    const history = await stand.api('GET', `/api/chat/sessions/${sessionId}/messages`);
    t.same(
      history.body.map((m: { sender: string; content: string }) => [m.sender, m.content]),
      [
        ['user', 'Hi there'],
        ['agent', REPLY],
      ],
      'the history is stored',
    );

    // The read marker moved to the answer: this user has nothing unread there.
    const readReply = await read;
    t.equal(readReply.status(), 200);
    const mine = await page.evaluate(async () => (await fetch('/api/chat/sessions?agent=main')).json());
    const row = (mine as { id: string; unread_count: number; last_read_message_id: string | null }[]).find((s) => s.id === sessionId)!;
    t.equal(row.unread_count, 0, 'unread count is 0');
    t.equal(row.last_read_message_id, history.body[1].id, 'the marker names the answer');

    // An attachment: uploaded, then its prompt sent with the text, and the CLI gets both.
    await page.getByLabel('Attach a file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('remember the milk\n') });
    await page.getByText(/Attached: notes\.txt/).waitFor();
    await page.getByLabel('Message').fill('Please read the notes');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.chat-msg-user', { hasText: 'Please read the notes' }).waitFor();
    await page.locator('.chat-msg-agent:not(.chat-live)').nth(1).waitFor();
    const stored = await stand.api('GET', `/api/chat/sessions/${sessionId}/messages`);
    const sent = stored.body[2] as { sender: string; content: string };
    t.equal(sent.sender, 'user');
    t.match(sent.content, /uploaded a file.*notes\.txt/s, 'the stored message names the upload');
    t.match(sent.content, /Please read the notes$/, 'and carries the text');
    const prompts = readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.stringify(JSON.parse(l)));
    t.ok(prompts.some((p) => p.includes('notes.txt') && p.includes('Please read the notes')), 'the CLI was given the upload and the text');

    // Abort during an answer that does not come.
    await page.getByLabel('Message').fill('Take your time [[hold]]');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText(/Stopped \(\d+ process/).waitFor();
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' });

    // Rename through the dialog; the list and the server follow.
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('dialog').getByLabel('Title').fill('Groceries');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await page.locator(`a[href*="session=${sessionId}"]`, { hasText: 'Groceries' }).waitFor();
    const renamed = await stand.api('GET', '/api/chat/sessions?agent=main');
    t.equal(renamed.body.find((s: { id: string }) => s.id === sessionId).title, 'Groceries', 'renamed on the server');

    t.same(await seriousViolations(page), [], 'axe: no serious violation');

    // An answer in another session arrives in the background: its unread count rises, and opening
    // it shows the answer once.
    await other.getByRole('button', { name: 'New chat' }).click();
    await other.waitForURL((u) => !!u.searchParams.get('session') && u.searchParams.get('session') !== sessionId);
    const otherSession = new URL(other.url()).searchParams.get('session')!;
    await page.reload();
    await page.locator(`a[href*="session=${otherSession}"]`).waitFor();
    await other.getByLabel('Message').fill('A second thread');
    await other.getByRole('button', { name: 'Send' }).click();
    await other.locator('.chat-live').waitFor();
    // Leave it before the answer: nobody reads it there.
    await other.locator(`a[href*="session=${sessionId}"]`).click();
    await other.locator('.chat-msg-user', { hasText: 'Hi there' }).waitFor();
    const badge = page.locator(`a[href*="session=${otherSession}"] .chat-unread`);
    await badge.waitFor();
    t.equal(await badge.innerText(), '1', 'the background session counts the answer');
    t.equal(await page.locator('.chat-msg-user', { hasText: 'A second thread' }).count(), 0, 'the open session does not show it');
    await page.locator(`a[href*="session=${otherSession}"]`).click();
    await page.locator('.chat-msg-user', { hasText: 'A second thread' }).waitFor();
    await badge.waitFor({ state: 'detached' });
    t.equal(await page.locator('.chat-msg-agent', { hasText: 'hotel' }).count(), 1, 'the answer is shown once');
    await page.locator(`a[href*="session=${sessionId}"]`).click();
    await page.getByLabel('Message').waitFor();

    // Phone width: no sideways scrolling, the session list stacks above the conversation.
    await page.setViewportSize({ width: 375, height: 800 });
    await page.getByLabel('Message').waitFor();
    t.ok(await page.evaluate(() => (globalThis as unknown as { document: Doc }).document.documentElement.scrollWidth <= 375), 'no horizontal overflow at 375 px');
    const [side, main] = await Promise.all([page.locator('.chat-side').boundingBox(), page.locator('.chat-main').boundingBox()]);
    t.ok(side && main && side.y + side.height <= main.y + 1, 'the list is above the conversation');
    t.same(await seriousViolations(page), [], 'axe at phone width');

    t.same(problems, [], 'no console errors or failed requests');
    t.same(otherProblems, [], 'none in the second tab either');

    // A viewer reads the chat but has no write control.
    const created = await stand.api('POST', '/api/users', { username: 'vera', password: 'viewer-password-1', role: 'viewer' });
    t.equal(created.status, 201);
    const viewer = await openPage(browser, stand, { colorScheme: 'dark' });
    await logIn(viewer.page, 'vera', 'viewer-password-1');
    await viewer.page.goto(`/chat/main?session=${sessionId}`);
    await viewer.page.locator('.chat-msg-agent', { hasText: 'hotel' }).first().waitFor();
    await viewer.page.getByText('Your role can read chats but not write in them.').waitFor();
    t.equal(await viewer.page.locator('textarea').count(), 0, 'no composer');
    t.equal(await viewer.page.getByRole('button', { name: /New chat|Rename|Delete|Archive|Model|Send/ }).count(), 0, 'no write control');
    t.same(await seriousViolations(viewer.page), [], 'axe for the viewer');
    t.same(viewer.problems, [], 'no problems for the viewer');
  });

  await t.test('chat: tool activity badges while the agent works; a hostile answer is rendered without script, handlers or javascript: links', async (t) => {
    // The answer tries all three; the tools come first, a line every 400 ms, so the badges are seen.
    const hostile = 'Look **here** <img src="x" onerror="globalThis.pwned=1"> <script>globalThis.pwned=2</script> [click me](javascript:globalThis.pwned=3) done';
    const stand = await panelStand(t, { env: { FAKE_CLI_REPLY: hostile, FAKE_CLI_TOOLS: 'Bash,Read', FAKE_CLI_DELAY_MS: '400' } });
    const browser = await openBrowser(t);
    const { page, problems } = await openPage(browser, stand);
    await logIn(page, 'admin', stand.adminPassword);
    await page.goto('/chat/main');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.waitForURL(/session=/);
    await page.getByLabel('Message').fill('Have a look');
    await page.getByRole('button', { name: 'Send' }).click();
    const activity = page.locator('.chat-live .chat-activity');
    await activity.getByText('Using Bash', { exact: true }).waitFor();
    await activity.getByText('Using Read', { exact: true }).waitFor();
    t.pass('the live answer shows a badge for each tool the agent used');

    const answer = page.locator('.chat-msg-agent:not(.chat-live)').last();
    await answer.locator('strong', { hasText: 'here' }).waitFor();
    t.equal(await page.locator('.chat-live').count(), 0, 'the badges go with the live bubble');
    const md = answer.locator('.markdown');
    t.equal(await md.locator('script').count(), 0, 'no script element');
    t.equal(await md.locator('[onerror], [onclick], [onload]').count(), 0, 'no event handler attribute');
    t.equal(await md.locator('a[href^="javascript:" i]').count(), 0, 'no javascript: link');
    t.match(await md.innerText(), /click me/, 'the link text is kept');
    t.match(await md.innerText(), /done/, 'and the rest of the answer');
    t.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined, 'nothing of the answer ran');
    t.same(problems, [], 'no console error or failed request');
  });
}
