import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { useMemo } from 'preact/hooks';

/*
 * Agent answers, memory and skills are markdown written by models and users: rendered by marked,
 * then sanitised by DOMPurify before it touches the DOM (no script, no event handler, no
 * javascript: link), and links open in a new tab without an opener.
 */
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }), { FORBID_TAGS: ['style', 'form', 'input'], FORBID_ATTR: ['style'] });
}

export function Markdown({ text, class: cls }: { text: string; class?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class={`markdown ${cls ?? ''}`} dangerouslySetInnerHTML={{ __html: html }} />;
}
