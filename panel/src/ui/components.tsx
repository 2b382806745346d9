import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { common } from './common-texts';

/*
 * The few building blocks every page is made of. Each is plain semantic HTML (a label for every
 * field, buttons that are buttons, a real <dialog>), so keyboard, screen readers and the
 * accessibility scan get them right once.
 */

export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · svc`;
  }, [title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title">{title}</h1>
        {actions ? <div class="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

export function Card({ title, actions, children, class: cls }: { title?: string; actions?: ComponentChildren; children: ComponentChildren; class?: string }) {
  return (
    <section class={`card ${cls ?? ''}`}>
      {title || actions ? (
        <header class="card-head">
          {title ? <h2>{title}</h2> : <span />}
          {actions}
        </header>
      ) : null}
      {children}
    </section>
  );
}

type ButtonProps = JSX.HTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'danger' | 'ghost' | 'default'; busy?: boolean; type?: 'button' | 'submit'; disabled?: boolean };

export function Button({ variant = 'default', busy, type = 'button', disabled, children, class: cls, ...rest }: ButtonProps) {
  return (
    <button {...rest} type={type} class={`btn btn-${variant} ${cls ?? ''}`} disabled={disabled || busy} aria-busy={busy ? 'true' : undefined}>
      {children}
    </button>
  );
}

/** A labelled control: the label wraps the control, so it is named without ids. */
export function Field({ label, hint, children }: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span class="field-label">{label}</span>
      {children}
      {hint ? <small class="field-hint">{hint}</small> : null}
    </label>
  );
}

export function ErrorBanner({ error, onRetry }: { error: Error | null | undefined; onRetry?: () => void }) {
  const t = useT(common);
  if (!error) return null;
  return (
    <div class="banner banner-error" role="alert">
      <span>{error.message || t('error')}</span>
      {onRetry ? (
        <Button variant="ghost" onClick={onRetry}>
          {t('retry')}
        </Button>
      ) : null}
    </div>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="banner banner-info" role="status">
      {children}
    </div>
  );
}

export function Loading() {
  const t = useT(common);
  return (
    <p class="muted" role="status" aria-live="polite">
      {t('loading')}
    </p>
  );
}

export function Empty({ children }: { children?: ComponentChildren }) {
  const t = useT(common);
  return <p class="muted empty">{children ?? t('empty')}</p>;
}

export function Badge({ tone = 'neutral', children }: { tone?: 'neutral' | 'ok' | 'warn' | 'bad' | 'info'; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

/** A modal dialog; closing it (Escape, the close button, a click on the backdrop) calls onClose. */
export function Modal({ title, open, onClose, children, footer }: { title: string; open: boolean; onClose: () => void; children: ComponentChildren; footer?: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const t = useT(common);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      class="modal"
      aria-label={title}
      onClose={onClose}
      onClick={(e) => {
        if (e.target === ref.current) onClose();
      }}
    >
      {open ? (
        <div class="modal-body">
          <header class="modal-head">
            <h2>{title}</h2>
            <Button variant="ghost" aria-label={t('close')} onClick={onClose}>
              ×
            </Button>
          </header>
          <div class="modal-content">{children}</div>
          {footer ? <footer class="modal-foot">{footer}</footer> : null}
        </div>
      ) : null}
    </dialog>
  );
}

/**
 * `ask(question)` opens an in-page confirmation and resolves with the answer (window.confirm
 * would block the page and cannot be styled or translated).
 */
export function useConfirm(): [JSX.Element, (question: string, danger?: boolean) => Promise<boolean>] {
  const t = useT(common);
  const [pending, setPending] = useState<{ question: string; danger: boolean; resolve: (ok: boolean) => void } | null>(null);
  const answer = (ok: boolean) => {
    pending?.resolve(ok);
    setPending(null);
  };
  const element = (
    <Modal
      title={t('areYouSure')}
      open={pending !== null}
      onClose={() => answer(false)}
      footer={
        <>
          <Button onClick={() => answer(false)}>{t('cancel')}</Button>
          <Button variant={pending?.danger ? 'danger' : 'primary'} onClick={() => answer(true)}>
            {t('confirm')}
          </Button>
        </>
      }
    >
      <p>{pending?.question}</p>
    </Modal>
  );
  const ask = (question: string, danger = true) => new Promise<boolean>((resolve) => setPending({ question, danger, resolve }));
  return [element, ask];
}

/** A table that scrolls sideways on a narrow screen instead of squeezing its columns. */
export function Table({ head, children, label }: { head: readonly string[]; children: ComponentChildren; label: string }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>
      <table>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** Tabs as buttons with aria-pressed: simple, and announced correctly. */
export function Tabs<K extends string>({ value, options, onChange, label }: { value: K; options: readonly { key: K; label: string }[]; onChange: (k: K) => void; label: string }) {
  return (
    <div class="tabs" role="group" aria-label={label}>
      {options.map((o) => (
        <button type="button" key={o.key} class={`tab ${o.key === value ? 'tab-on' : ''}`} aria-pressed={o.key === value} onClick={() => onChange(o.key)}>
          {o.label}
        </button>
      ))}
    </div>
  );
}
