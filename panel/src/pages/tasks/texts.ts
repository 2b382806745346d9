import { texts } from '../../i18n';

export const taskTexts = texts({
  en: {
    title: 'Tasks',
    newTask: 'New task',
    filter: 'Status filter',
    all: 'All',
    running: 'Running',
    waiting: 'Waiting',
    done: 'Completed',
    failed: 'Failed',
    cancelled: 'Cancelled',
    list: 'Tasks',
    name: 'Name',
    agent: 'Agent',
    status: 'Status',
    created: 'Created',
    elapsed: 'Elapsed',
    actions: 'Actions',
    details: 'Details',
    detailsOf: 'Details of {name}',
    cancel: 'Cancel task',
    cancelOf: 'Cancel {name}',
    delete: 'Delete',
    deleteOf: 'Delete {name}',
    confirmCancel: 'Cancel task “{name}”? Its run is stopped.',
    confirmDelete: 'Delete task “{name}” with its folder? This cannot be undone.',
    none: 'No tasks here.',
    prompt: 'Prompt',
    result: 'Result',
    noResult: 'No result yet.',
    provider: 'Provider / model',
    parent: 'Parent agent',
    question: 'Question',
    answer: 'Answer',
    send: 'Send answer',
    answered: 'Answer sent: the task continues.',
    waitingTitle: 'Waiting for an answer',
    waitingHint: 'These tasks asked their parent a question and wait for the answer.',
    createTitle: 'New task',
    promptLabel: 'What the task should do',
    create: 'Create task',
    created_ok: 'Task created.',
    readOnly: 'Read-only: your role can look at tasks but not change them.',
    live: 'Updates live',
  },
  ru: {
    title: 'Задачи',
    newTask: 'Новая задача',
    filter: 'Фильтр по статусу',
    all: 'Все',
    running: 'Выполняются',
    waiting: 'Ждут ответа',
    done: 'Завершены',
    failed: 'С ошибкой',
    cancelled: 'Отменены',
    list: 'Задачи',
    name: 'Название',
    agent: 'Агент',
    status: 'Статус',
    created: 'Создана',
    elapsed: 'Длительность',
    actions: 'Действия',
    details: 'Подробнее',
    detailsOf: 'Подробнее о задаче {name}',
    cancel: 'Отменить задачу',
    cancelOf: 'Отменить {name}',
    delete: 'Удалить',
    deleteOf: 'Удалить {name}',
    confirmCancel: 'Отменить задачу «{name}»? Её выполнение будет остановлено.',
    confirmDelete: 'Удалить задачу «{name}» вместе с её папкой? Это действие необратимо.',
    none: 'Задач нет.',
    prompt: 'Задание',
    result: 'Результат',
    noResult: 'Результата пока нет.',
    provider: 'Провайдер / модель',
    parent: 'Родительский агент',
    question: 'Вопрос',
    answer: 'Ответ',
    send: 'Отправить ответ',
    answered: 'Ответ отправлен, задача продолжается.',
    waitingTitle: 'Ждут ответа',
    waitingHint: 'Эти задачи задали вопрос родительскому агенту и ждут ответа.',
    createTitle: 'Новая задача',
    promptLabel: 'Что должна сделать задача',
    create: 'Создать задачу',
    created_ok: 'Задача создана.',
    readOnly: 'Только чтение: ваша роль позволяет смотреть задачи, но не менять их.',
    live: 'Обновляется автоматически',
  },
});

export type TaskKey = keyof typeof taskTexts.en;

/** Seconds as "1 h 2 min", "3 min 4 s" or "5 s" (unit letters are the same in both languages' short forms here). */
export function formatElapsed(s: number | null | undefined, lang: 'en' | 'ru'): string {
  if (s === null || s === undefined) return '—';
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  const [uh, um, us] = lang === 'ru' ? ['ч', 'мин', 'с'] : ['h', 'min', 's'];
  if (h > 0) return `${h} ${uh} ${m} ${um}`;
  if (m > 0) return `${m} ${um} ${sec} ${us}`;
  return `${sec} ${us}`;
}

export const STATUS_TONE: Record<string, 'neutral' | 'ok' | 'warn' | 'bad' | 'info'> = {
  running: 'info',
  waiting: 'warn',
  done: 'ok',
  completed: 'ok',
  failed: 'bad',
  cancelled: 'neutral',
  pending: 'neutral',
  skipped: 'neutral',
};
