import { useEffect, useState } from 'preact/hooks';
import type { SkillEntryWire } from '../../../schemas/index.js';
import { del, get, post, put, query, seg } from '../api/client';
import { formatBytes, formatTime, texts, useT } from '../i18n';
import { isAdmin, isOperator, useSession } from '../session';
import { useAction, useAsync } from '../ui/async';
import { common } from '../ui/common-texts';
import { Badge, Button, Card, Empty, ErrorBanner, Field, Loading, Modal, Notice, Page, Table, Tabs, useConfirm } from '../ui/components';
import { Markdown } from '../ui/markdown';
import './automation.css';
import { AgentSelect, forAgent, useAgents, usePickedAgent } from './agent-pick';
import { ListOf } from '../ui/list-of';

/*
 * Skills (WIRE.md §2): an agent's merged view (its own skills and the global ones; a global one is
 * read-only here, and `overrides` marks an own skill that shadows a global one), and the global scope
 * under `/api/skills`, which only admins may see or change.
 */

const tx = texts({
  en: {
    title: 'Skills',
    perAgent: 'Per agent',
    global: 'Global',
    scopeLabel: 'Scope',
    noAccess: 'Your role cannot read skills.',
    skills: 'Skills',
    description: 'Description',
    scope: 'Scope',
    modified: 'Modified',
    size: 'Size',
    scope_agent: 'agent',
    scope_global: 'global',
    overrides: 'overrides global',
    readOnlyGlobal: 'A global skill: read-only here (change it under Global).',
    add: 'New skill',
    newSkill: 'New skill',
    skillName: 'Name (letters, digits, _ and -)',
    content: 'Document (Markdown)',
    view: 'Open',
    deleteQ: 'Delete the skill "{name}"?',
    none: 'No skills yet',
    noDoc: 'This skill has no main document.',
    edit: 'Edit',
    preview: 'Preview',
    mode: 'View',
  },
  ru: {
    title: 'Навыки',
    perAgent: 'По агентам',
    global: 'Глобальные',
    scopeLabel: 'Область',
    noAccess: 'Ваша роль не может читать навыки.',
    skills: 'Навыки',
    description: 'Описание',
    scope: 'Область',
    modified: 'Изменён',
    size: 'Размер',
    scope_agent: 'агент',
    scope_global: 'глобальный',
    overrides: 'перекрывает глобальный',
    readOnlyGlobal: 'Глобальный навык: здесь только чтение (меняется во вкладке «Глобальные»).',
    add: 'Новый навык',
    newSkill: 'Новый навык',
    skillName: 'Имя (буквы, цифры, _ и -)',
    content: 'Документ (Markdown)',
    view: 'Открыть',
    deleteQ: 'Удалить навык «{name}»?',
    none: 'Навыков пока нет',
    noDoc: 'У этого навыка нет основного документа.',
    edit: 'Правка',
    preview: 'Просмотр',
    mode: 'Вид',
  },
});

type Skill = SkillEntryWire;
type SkillDoc = Skill & { content: string };

function SkillEditor({ base, skill, writable, onClose, onSaved }: { base: string; skill: Skill | null; writable: boolean; onClose: () => void; onSaved: () => void }) {
  const t = useT(tx);
  const c = useT(common);
  const doc = useAsync(() => (skill ? get<SkillDoc>(`${base}/${seg(skill.name)}`) : Promise.resolve(null)), [base, skill?.name]);
  const [name, setName] = useState('');
  const [content, setContent] = useState('');
  const [mode, setMode] = useState<'edit' | 'preview'>(writable ? 'edit' : 'preview');
  const action = useAction();
  useEffect(() => {
    if (doc.data) setContent(doc.data.content);
  }, [doc.data]);
  const submit = async (e: Event) => {
    e.preventDefault();
    const ok = await action.run(() => (skill ? put(`${base}/${seg(skill.name)}`, { content }) : post(base, { name, content })));
    if (ok) onSaved();
  };
  return (
    <Modal title={skill ? skill.name : t('newSkill')} open onClose={onClose}>
      {skill && !writable && skill.scope === 'global' ? <Notice>{t('readOnlyGlobal')}</Notice> : null}
      <ErrorBanner error={doc.error ?? action.error} />
      {skill && doc.data === undefined && !doc.error ? (
        <Loading />
      ) : (
        <form onSubmit={(e) => void submit(e)}>
          {!skill ? (
            <Field label={t('skillName')}>
              <input name="name" required pattern="[A-Za-z0-9_\-]+" value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </Field>
          ) : null}
          {writable ? (
            <Tabs
              label={t('mode')}
              value={mode}
              onChange={setMode}
              options={[
                { key: 'edit', label: t('edit') },
                { key: 'preview', label: t('preview') },
              ]}
            />
          ) : null}
          {writable && mode === 'edit' ? (
            <Field label={t('content')}>
              <textarea name="content" class="auto-editor" value={content} onInput={(e) => setContent(e.currentTarget.value)} />
            </Field>
          ) : content ? (
            <Markdown text={content} />
          ) : (
            <Empty>{t('noDoc')}</Empty>
          )}
          {writable ? (
            <div class="modal-foot">
              <Button onClick={onClose}>{c('cancel')}</Button>
              <Button type="submit" variant="primary" busy={action.busy}>
                {c('save')}
              </Button>
            </div>
          ) : null}
        </form>
      )}
    </Modal>
  );
}

export default function Skills() {
  const t = useT(tx);
  const c = useT(common);
  const user = useSession();
  const admin = isAdmin(user);
  const mayRead = isOperator(user);
  const agents = useAgents();
  const [scope, setScope] = useState<'agent' | 'global'>('agent');
  const [agent, setAgent] = usePickedAgent(agents.data);
  const base = scope === 'global' ? '/api/skills' : `/api/agents/${seg(agent)}/skills`;
  const list = useAsync(
    () => (!mayRead ? Promise.resolve([]) : scope === 'global' ? get<Skill[]>(base) : forAgent(agent, agents.data, () => get<Skill[]>(`${base}${query({ scope: 'merged' })}`), [])),
    [base, agents.data, mayRead],
  );
  const [open, setOpen] = useState<Skill | null | 'new'>(null);
  const action = useAction();
  const [confirmEl, ask] = useConfirm();

  if (!mayRead) {
    return (
      <Page title={t('title')}>
        <Notice>{t('noAccess')}</Notice>
      </Page>
    );
  }
  // Only the agent's own copies are written through its routes; globals only under Global.
  const writable = (s: Skill | null) => admin && (s === null || scope === 'global' || s.scope === 'agent');

  return (
    <Page
      title={t('title')}
      actions={
        <>
          <Button onClick={() => void list.reload()}>{c('refresh')}</Button>
          {admin ? (
            <Button variant="primary" onClick={() => setOpen('new')}>
              {t('add')}
            </Button>
          ) : null}
        </>
      }
    >
      {confirmEl}
      {admin ? (
        <Tabs
          label={t('scopeLabel')}
          value={scope}
          onChange={setScope}
          options={[
            { key: 'agent', label: t('perAgent') },
            { key: 'global', label: t('global') },
          ]}
        />
      ) : null}
      {scope === 'agent' ? (
        <div class="compact">
          <AgentSelect value={agent} onChange={setAgent} agents={agents.data} />
        </div>
      ) : null}
      <ErrorBanner error={action.error ?? list.error} onRetry={list.error ? () => void list.reload() : undefined} />
      <Card title={scope === 'global' ? t('global') : `${t('skills')}: ${agent}`}>
        <ListOf list={list} empty={t('none')}>
          {(items) => (
            <Table label={t('skills')} head={[c('name'), t('description'), t('scope'), t('modified'), t('size'), c('actions')]}>
              {items.map((s) => (
                <tr key={`${s.scope}:${s.name}`}>
                  <td>
                    <button type="button" class="auto-link" onClick={() => setOpen(s)} aria-label={`${t('view')}: ${s.name}`}>
                      {s.name}
                    </button>
                  </td>
                  <td>{s.description || '—'}</td>
                  <td>
                    <Badge tone={s.scope === 'global' ? 'info' : 'neutral'}>{s.scope === 'global' ? t('scope_global') : t('scope_agent')}</Badge>
                    {s.overrides ? (
                      <>
                        {' '}
                        <Badge tone="warn">{t('overrides')}</Badge>
                      </>
                    ) : null}
                  </td>
                  <td>{formatTime(s.mtime)}</td>
                  <td>{formatBytes(s.size)}</td>
                  <td>
                    <div class="auto-actions">
                      <Button onClick={() => setOpen(s)} aria-label={`${writable(s) ? c('edit') : t('view')}: ${s.name}`}>
                        {writable(s) ? c('edit') : t('view')}
                      </Button>
                      {writable(s) ? (
                        <Button
                          variant="danger"
                          aria-label={`${c('delete')}: ${s.name}`}
                          onClick={() => void (async () => {
                            if (!(await ask(t('deleteQ', { name: s.name })))) return;
                            if (await action.run(() => del(`${base}/${seg(s.name)}`))) await list.reload();
                          })()}
                        >
                          {c('delete')}
                        </Button>
                      ) : null}
                    </div>
                  </td>
                </tr>
              ))}
            </Table>
          )}
        </ListOf>
      </Card>
      {open !== null ? (
        <SkillEditor
          key={`${base}:${open === 'new' ? '' : open.name}`}
          base={base}
          skill={open === 'new' ? null : open}
          writable={writable(open === 'new' ? null : open)}
          onClose={() => setOpen(null)}
          onSaved={() => {
            setOpen(null);
            void list.reload();
          }}
        />
      ) : null}
    </Page>
  );
}
