import { useEffect, useState } from 'preact/hooks';
import type { ChatSessionView, ProviderListingReply } from '../../../../schemas/index.js';
import { del, get, post, put, seg } from '../../api/client';
import { useT } from '../../i18n';
import { useAction } from '../../ui/async';
import { Button, ErrorBanner, Field, Loading, Modal, useConfirm } from '../../ui/components';
import { common } from '../../ui/common-texts';
import { chatTexts } from './texts';

/*
 * What an operator does to the open session: rename it, pick its provider and model, archive or
 * delete it. Viewers never get this component.
 */

export function SessionTools({ session, onChanged, onDeleted }: { session: ChatSessionView; onChanged: (s: ChatSessionView) => void; onDeleted: () => void }) {
  const t = useT(chatTexts);
  const c = useT(common);
  const [confirmEl, ask] = useConfirm();
  const action = useAction();
  const [renaming, setRenaming] = useState(false);
  const [choosing, setChoosing] = useState(false);
  const path = `/api/chat/sessions/${seg(session.id)}`;
  const merge = (s: Partial<ChatSessionView>) => onChanged({ ...session, ...s });

  return (
    <div class="chat-tools">
      {session.model_override ? <span class="badge badge-info">{`${session.provider_override ?? ''}/${session.model_override}`}</span> : null}
      <Button variant="ghost" onClick={() => setRenaming(true)}>
        {t('rename')}
      </Button>
      <Button variant="ghost" onClick={() => setChoosing(true)}>
        {t('model')}
      </Button>
      <Button
        variant="ghost"
        busy={action.busy}
        onClick={() => void action.run(async () => merge(await post<ChatSessionView>(`${path}/${session.archived ? 'unarchive' : 'archive'}`)))}
      >
        {session.archived ? t('unarchive') : t('archive')}
      </Button>
      <Button
        variant="danger"
        busy={action.busy}
        onClick={() => void (async () => {
          if (!(await ask(t('deleteQuestion', { title: session.title })))) return;
          if (await action.run(() => del(path))) onDeleted();
        })()}
      >
        {c('delete')}
      </Button>
      <ErrorBanner error={action.error} />
      {confirmEl}
      {renaming ? <RenameDialog session={session} onClose={() => setRenaming(false)} onSaved={(s) => merge(s)} /> : null}
      {choosing ? <ModelDialog session={session} onClose={() => setChoosing(false)} onSaved={(s) => merge(s)} /> : null}
    </div>
  );
}

function RenameDialog({ session, onClose, onSaved }: { session: ChatSessionView; onClose: () => void; onSaved: (s: ChatSessionView) => void }) {
  const t = useT(chatTexts);
  const c = useT(common);
  const [title, setTitle] = useState(session.title);
  const action = useAction();
  const save = async (e: Event) => {
    e.preventDefault();
    let saved: ChatSessionView | null = null;
    if (await action.run(async () => (saved = await put<ChatSessionView>(`/api/chat/sessions/${seg(session.id)}`, { title })))) {
      onSaved(saved!);
      onClose();
    }
  };
  return (
    <Modal title={t('renameTitle')} open onClose={onClose}>
      <form onSubmit={(e) => void save(e)}>
        <Field label={t('titleLabel')}>
          <input name="title" value={title} maxLength={200} required onInput={(e) => setTitle(e.currentTarget.value)} />
        </Field>
        <ErrorBanner error={action.error} />
        <div class="modal-foot">
          <Button onClick={onClose}>{c('cancel')}</Button>
          <Button type="submit" variant="primary" busy={action.busy}>
            {c('save')}
          </Button>
        </div>
      </form>
    </Modal>
  );
}

function ModelDialog({ session, onClose, onSaved }: { session: ChatSessionView; onClose: () => void; onSaved: (s: ChatSessionView) => void }) {
  const t = useT(chatTexts);
  const c = useT(common);
  const [listing, setListing] = useState<ProviderListingReply | null>(null);
  const [loadError, setLoadError] = useState<Error | null>(null);
  const [provider, setProvider] = useState(session.provider_override ?? '');
  const [model, setModel] = useState(session.model_override ?? '');
  const action = useAction();
  useEffect(() => {
    get<ProviderListingReply>('/api/providers/available')
      .then(setListing)
      .catch((e: unknown) => setLoadError(e instanceof Error ? e : new Error(String(e))));
  }, []);
  const chosen = listing?.providers.find((p) => p.name === provider);
  const submit = async (body: { provider: string | null; model: string | null }) => {
    let saved: ChatSessionView | null = null;
    if (await action.run(async () => (saved = await post<ChatSessionView>(`/api/chat/sessions/${seg(session.id)}/provider`, body)))) {
      onSaved(saved!);
      onClose();
    }
  };
  return (
    <Modal title={t('modelTitle')} open onClose={onClose}>
      <ErrorBanner error={loadError} />
      {!listing && !loadError ? <Loading /> : null}
      {listing ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void submit(provider && model ? { provider, model } : { provider: null, model: null });
          }}
        >
          <p class="muted small">{t('modelHint')}</p>
          <Field label={t('provider')}>
            <select
              name="provider"
              value={provider}
              onChange={(e) => {
                const p = e.currentTarget.value;
                setProvider(p);
                setModel(listing.providers.find((x) => x.name === p)?.default_model ?? '');
              }}
            >
              <option value="">{t('agentDefault')}</option>
              {listing.providers.map((p) => (
                <option key={p.name} value={p.name} disabled={!p.authenticated}>
                  {p.authenticated ? p.name : t('notSignedIn', { name: p.name })}
                </option>
              ))}
            </select>
          </Field>
          {chosen ? (
            <Field label={t('model')}>
              <select name="model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
                {[...new Set([...chosen.models, ...(model ? [model] : [])])].map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </Field>
          ) : null}
          <ErrorBanner error={action.error} />
          <div class="modal-foot">
            {session.model_override ? (
              <Button busy={action.busy} onClick={() => void submit({ provider: null, model: null })}>
                {t('reset')}
              </Button>
            ) : null}
            <Button onClick={onClose}>{c('cancel')}</Button>
            <Button type="submit" variant="primary" busy={action.busy}>
              {c('save')}
            </Button>
          </div>
        </form>
      ) : null}
    </Modal>
  );
}
