import type { Language } from '../../schemas/index.js';
import type { HttpReply } from './http.js';

/*
 * WIRE.md §2: admin API errors are `{"error": "<human text>"}` in the language of
 * `Accept-Language`: `ru` by default, `en`, and `uk` served as `ru`. In English the text is the
 * error's own message (it names the field, the limit, the id); in Russian it is a sentence for the
 * code, or for the status when the code has none, with the English specifics kept in `detail`.
 */

const RU_BY_CODE: Readonly<Record<string, string>> = {
  'invalid-json': 'Тело запроса не является корректным JSON',
  'invalid-body': 'Некорректные данные в теле запроса',
  'invalid-query': 'Некорректные параметры запроса',
  'invalid-path': 'Недопустимый путь',
  'invalid-command': 'Некорректные данные команды',
  'invalid-id': 'Недопустимый идентификатор',
  empty: 'Пустое сообщение',
  'message-too-large': 'Сообщение слишком длинное',
  'body-too-large': 'Тело запроса слишком большое',
  'file-too-large': 'Файл слишком большой',
  'unsupported-media-type': 'Неподдерживаемый тип содержимого',
  'method-not-allowed': 'Метод не поддерживается для этого адреса',
  'rate-limited': 'Слишком много запросов, попробуйте позже',
  unauthorized: 'Требуется вход в систему',
  'invalid-token': 'Недействительный или просроченный токен',
  forbidden: 'Недостаточно прав для этого действия',
  'agent-not-allowed': 'Нет доступа к этому агенту',
  'unknown-agent': 'Агент не найден',
  'unknown-user': 'Пользователь не найден',
  'not-found': 'Не найдено',
  'session-busy': 'В этой сессии уже ждут ответа слишком много сообщений',
  'agent-stopped': 'Агент не запущен',
  'no-handler': 'Служба временно недоступна',
  'no-task-hub': 'Система задач не запущена',
  'command-timeout': 'Превышено время ожидания ответа',
  'transcription-unavailable': 'Распознавание речи недоступно',
  'invalid-additional-directory': 'Недопустимый каталог',
  'invalid-agent-name': 'Недопустимое имя агента',
  'version-conflict': 'Данные изменились, повторите попытку',
  'internal-error': 'Внутренняя ошибка сервера',
};

const RU_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'Некорректный запрос',
  401: 'Требуется вход в систему',
  403: 'Недостаточно прав для этого действия',
  404: 'Не найдено',
  405: 'Метод не поддерживается для этого адреса',
  409: 'Конфликт с текущим состоянием',
  413: 'Запрос слишком большой',
  415: 'Неподдерживаемый тип содержимого',
  429: 'Слишком много запросов, попробуйте позже',
  500: 'Внутренняя ошибка сервера',
  503: 'Служба временно недоступна',
  504: 'Превышено время ожидания ответа',
};

/** An error reply (`{error, code}`) in `lang`; any other reply is returned as it is. */
export function localiseError(reply: HttpReply, lang: Language): HttpReply {
  if (lang === 'en' || reply.status < 400 || !reply.json || typeof reply.json !== 'object') return reply;
  const body = reply.json as { error?: unknown; code?: unknown };
  if (typeof body.error !== 'string') return reply;
  const code = typeof body.code === 'string' ? body.code : '';
  const text = (Object.hasOwn(RU_BY_CODE, code) ? RU_BY_CODE[code] : undefined) ?? RU_BY_STATUS[reply.status] ?? 'Ошибка запроса';
  return { ...reply, json: { ...body, error: text, detail: body.error } };
}
