import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations, type Stand } from '../fixtures/panel-browser.js';

/*
 * The dashboard, the agents list, an agent's page and the notifications, in a real browser against
 * a real daemon: every write made through the UI and checked through the API.
 */

// A 1×1 transparent PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/** Polls `check` until it returns something truthy (a condition the server reaches on its own time). */
async function until<R>(check: () => Promise<R | undefined | null | false>, what: string, ms = 15_000): Promise<R> {
  const end = Date.now() + ms;
  for (;;) {
    const r = await check();
    if (r) return r;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** A task that fails (the fake CLI exits 1 on `[[fail]]`): the server records a task_failed event and raises a critical notification. */
async function failedTask(stand: Stand, name: string): Promise<string> {
  const r = await stand.api('POST', '/api/tasks', { name, agent: 'main', prompt: '[[fail]] please' });
  if (r.status !== 201) throw new Error(`task not created: ${r.status} ${JSON.stringify(r.body)}`);
  const id = String(r.body.task_id ?? r.body.id);
  await until(async () => {
    const n = await stand.api('GET', '/api/notifications?limit=50');
    return (n.body as { title: string }[]).some((x) => x.title.includes(name));
  }, `the notification of ${name}`);
  return id;
}

const unread = async (stand: Stand) => (await stand.api('GET', '/api/notifications/unread-count')).body.count as number;

// Evaluated in the page (the test's own types have no DOM).
const fits = (page: Page) => page.evaluate('document.documentElement.scrollWidth <= window.innerWidth') as Promise<boolean>;

if (SKIP_REASON) {
  t.plan(0, SKIP_REASON);
} else {
  await t.test('dashboard, agents, agent detail and notifications', async (t) => {
    const stand = await panelStand(t);
    const browser = await openBrowser(t);

    await t.test('the dashboard: counters, activity detail, errors acknowledged, host figures, three requests', async (t) => {
      await failedTask(stand, 'broken-report');
      const { page, problems } = await openPage(browser, stand);
      await logIn(page, 'admin', stand.adminPassword);
      // The view the login lands on has settled: what follows counts the next view alone.
      await page.getByText('Agents online').waitFor();
      await page.locator('button.dash-event').first().waitFor();
      const calls: string[] = [];
      page.on('request', (r) => {
        const u = new URL(r.url());
        if (u.pathname.startsWith('/api/dashboard') || u.pathname.startsWith('/api/activity') || u.pathname.startsWith('/api/system')) calls.push(`${r.method()} ${u.pathname}${u.search}`);
      });
      await page.goto('/');
      await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
      await page.getByText('Agents online').waitFor();
      await page.getByRole('heading', { name: 'System' }).waitFor();
      await page.locator('dd', { hasText: /\d+\.\d+/ }).first().waitFor();
      t.equal(await page.locator('meter').count(), 3, 'CPU, memory and disk meters');

      const errorsCard = page.locator('section.card', { has: page.getByRole('heading', { name: 'Errors', level: 2 }) });
      const firstError = errorsCard.locator('button.dash-event').first();
      await firstError.waitFor();
      t.same(calls.sort(), ['GET /api/activity/recent?limit=20&severity=error', 'GET /api/dashboard/summary', 'GET /api/system/status'], 'one view (shell included) makes three requests');

      // An event opens in a dialog with its source record.
      const detail = page.waitForResponse((r) => r.url().includes('/api/activity/') && r.url().includes('verbose=1'));
      await firstError.click();
      t.equal((await detail).status(), 200);
      const dialog = page.getByRole('dialog');
      await dialog.getByText('Source record').waitFor();
      t.match(await dialog.textContent(), /Source(notifications|tasks)/, 'the source is named');
      t.same(await seriousViolations(page), [], 'no serious violation with the dialog open');
      await dialog.getByRole('button', { name: 'Close' }).click();
      await dialog.waitFor({ state: 'hidden' });

      const before = (await (await page.request.get('/api/dashboard/summary')).json()) as { counters: { failed_last_24h: number } };
      t.ok(before.counters.failed_last_24h >= 1, 'the failure counts before the acknowledgement');
      const ack = page.waitForResponse((r) => r.url().endsWith('/api/dashboard/errors/ack'));
      await errorsCard.getByRole('button', { name: 'Acknowledge' }).click();
      t.equal((await ack).status(), 200);
      await errorsCard.getByText('No new errors').waitFor();
      const after = (await (await page.request.get('/api/dashboard/summary')).json()) as { counters: { failed_last_24h: number } };
      t.equal(after.counters.failed_last_24h, 0, 'acknowledged: no failures counted for this user');
      const errs = (await (await page.request.get('/api/activity/recent?severity=error')).json()) as unknown[];
      t.same(errs, [], 'and the error feed is empty for them');

      // The severity filter asks the server for that slice.
      const filtered = page.waitForResponse((r) => r.url().includes('/api/activity/recent') && r.url().includes('severity=warning'));
      await page.getByRole('group', { name: 'Filter by severity' }).getByRole('button', { name: 'Warnings' }).click();
      t.equal((await filtered).status(), 200);

      t.same(await seriousViolations(page), []);
      await page.setViewportSize({ width: 375, height: 800 });
      // The charts follow their box through a ResizeObserver, a frame or two after the resize.
      t.ok(await until(() => fits(page), 'the page to fit 375 px', 5000), 'no sideways scrolling at phone width');
      t.same(problems, []);
    });

    await t.test('the dashboard in Russian and in the dark', async (t) => {
      const { page, problems } = await openPage(browser, stand, { locale: 'ru-RU', colorScheme: 'dark' });
      await logIn(page, 'admin', stand.adminPassword);
      await page.getByRole('heading', { level: 1, name: 'Обзор' }).waitFor();
      await page.getByText('Агенты в сети').waitFor();
      await page.getByRole('heading', { name: 'Последние события' }).waitFor();
      await page.getByRole('heading', { name: 'Система' }).waitFor();
      // The transports' states and their fixed phrases are Russian too; only names stay as they are.
      await page.getByRole('heading', { name: 'Чат-транспорты' }).waitFor();
      const transports = page.locator('.dash-transports');
      await transports.getByText('работает').first().waitFor();
      await transports.getByText('чат панели администратора, хранится в журнале событий').waitFor();
      t.notMatch(await transports.innerText(), /\b(running|starting|retrying|stopped|not started|connection|connecting|kept in the event log)\b/, 'no English state or phrase in the transports card');
      t.same(await seriousViolations(page), [], 'contrast holds in the dark theme');
      t.same(problems, []);
    });

    await t.test('the agents list, then the page of an agent: metrics, history, log tail, directories and avatar', async (t) => {
      const { page, problems } = await openPage(browser, stand, {
        // The two refused directories, on purpose (the browser's console line names no URL).
        allow: [/http 400: PUT .*\/api\/agents\/main$/, /^console: Failed to load resource: the server responded with a status of 400/],
      });
      // One sign-in for both pages: the server allows five a minute from one address.
      await logIn(page, 'admin', stand.adminPassword);
      await page.goto('/agents');
      const table = page.getByRole('region', { name: 'Agent list' });
      await table.getByRole('link', { name: 'main' }).waitFor();
      t.match(await table.textContent(), /claude/, 'the provider is shown');
      t.same(await seriousViolations(page), []);
      await table.getByRole('link', { name: 'main' }).click();
      await page.waitForURL(/\/agents\/main$/);
      await page.getByRole('link', { name: 'Chat with this agent' }).waitFor();
      t.equal(await page.getByRole('link', { name: 'Chat with this agent' }).getAttribute('href'), '/chat/main');
      await page.getByRole('heading', { name: 'Metrics' }).waitFor();
      await page.locator('.agent-metrics').getByText('Executions').waitFor();
      // The failed task ran a turn: the history has something to draw.
      await page.getByRole('img', { name: 'Executions and errors over time' }).locator('canvas').waitFor();
      const week = page.waitForResponse((r) => r.url().includes('/metrics/history?period=7d'));
      await page.getByRole('button', { name: 'Last 7 days' }).click();
      t.equal((await week).status(), 200);

      // The log: the tail first, then polls continue from the cursor.
      await page.locator('pre.log').waitFor();
      const poll = await page.waitForResponse((r) => r.url().includes('/api/logs/poll') && !r.url().includes('after=0'));
      t.equal(poll.status(), 200, 'the live tail polls on from its cursor');

      // Additional directories: a real one is saved; a relative and a missing one show the server's reason.
      const dir = join(stand.root, 'extra-project');
      mkdirSync(dir, { recursive: true });
      const dirs = page.locator('section.card', { has: page.getByRole('heading', { name: 'Additional directories' }) });
      await dirs.getByLabel('Directory to add').fill(dir);
      const saved = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith('/api/agents/main'));
      await dirs.getByRole('button', { name: 'Add' }).click();
      t.equal((await saved).status(), 200);
      await dirs.getByText(dir).waitFor();
      t.same((await stand.api('GET', '/api/agents/main')).body.additional_directories, [dir], 'saved on the server');

      await dirs.getByLabel('Directory to add').fill('relative/dir');
      await dirs.getByRole('button', { name: 'Add' }).click();
      t.match(await dirs.getByRole('alert').textContent(), /absolute/i, "the server's reason for a relative path");
      await dirs.getByLabel('Directory to add').fill(join(stand.root, 'no-such-dir'));
      await dirs.getByRole('button', { name: 'Add' }).click();
      await dirs.getByRole('alert').filter({ hasText: 'no-such-dir' }).waitFor();
      t.same((await stand.api('GET', '/api/agents/main')).body.additional_directories, [dir], 'the refused paths were not saved');

      const removed = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith('/api/agents/main'));
      await dirs.getByRole('button', { name: `Remove ${dir}` }).click();
      t.equal((await removed).status(), 200);
      await dirs.getByText('No additional directories').waitFor();
      t.same((await stand.api('GET', '/api/agents/main')).body.additional_directories, []);

      // The avatar: uploaded as a file, then removed.
      const avatar = page.locator('section.card', { has: page.getByRole('heading', { name: 'Avatar' }) });
      await avatar.getByLabel('Picture (PNG, JPEG, GIF or WebP)').setInputFiles({ name: 'me.png', mimeType: 'image/png', buffer: PNG });
      const uploaded = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/api/agents/main/avatar'));
      await avatar.getByRole('button', { name: 'Upload' }).click();
      t.equal((await uploaded).status(), 200);
      await avatar.getByText('Avatar saved').waitFor();
      t.equal((await stand.api('GET', '/api/agents/main')).body.has_avatar, true, 'the server has the avatar');
      await avatar.locator('img.avatar').waitFor();
      t.ok(await avatar.locator('img.avatar').evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth === 1), 'the picture loads');

      await avatar.getByRole('button', { name: 'Remove avatar' }).click();
      const gone = page.waitForResponse((r) => r.request().method() === 'DELETE' && r.url().endsWith('/api/agents/main/avatar'));
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      t.equal((await gone).status(), 200);
      await avatar.getByText('No avatar').waitFor();
      t.equal((await stand.api('GET', '/api/agents/main')).body.has_avatar, false, 'removed on the server');

      t.same(await seriousViolations(page), []);
      await page.setViewportSize({ width: 375, height: 800 });
      // The charts follow their box through a ResizeObserver, a frame or two after the resize.
      t.ok(await until(() => fits(page), 'the page to fit 375 px', 5000), 'no sideways scrolling at phone width');
      t.same(problems, []);
    });

    await t.test('notifications: live push, filters, mark read and read all', async (t) => {
      const { page, problems } = await openPage(browser, stand);
      await logIn(page, 'admin', stand.adminPassword);
      await page.goto('/notifications');
      await page.getByRole('heading', { level: 1, name: 'Notifications' }).waitFor();
      const list = page.getByRole('list', { name: 'Notification list' });
      await list.getByText('broken-report').first().waitFor();

      // Raised while the page is open: it appears on top without a reload.
      await failedTask(stand, 'nightly-import');
      await list.locator('li').first().getByText('nightly-import').waitFor();
      t.ok((await unread(stand)) >= 2, 'both failures are unread');

      // Type is filtered here: no cron notification exists.
      await page.getByLabel('Type').selectOption('cron');
      await page.getByText('No notifications').waitFor();
      await page.getByLabel('Type').selectOption('task');
      await list.getByText('nightly-import').waitFor();

      // Severity is filtered by the server: a failed task is critical, so it is gone under Info and back under Critical.
      const asked = (severity: string) => page.waitForResponse((r) => new URL(r.url()).pathname === '/api/notifications' && new URL(r.url()).searchParams.get('severity') === severity);
      let reply = asked('info');
      await page.getByLabel('Severity').selectOption('info');
      t.equal((await reply).status(), 200, 'the list is asked for info only');
      await list.getByText('nightly-import').waitFor({ state: 'detached' });
      t.equal(await list.getByText('broken-report').count(), 0, 'no critical notification under Info');
      reply = asked('critical');
      await page.getByLabel('Severity').selectOption('critical');
      t.equal((await reply).status(), 200, 'then for critical only');
      await list.getByText('nightly-import').waitFor();
      await list.getByText('broken-report').first().waitFor();
      await page.getByLabel('Severity').selectOption('visible');
      await list.getByText('nightly-import').waitFor();

      const before = await unread(stand);
      const marked = page.waitForResponse((r) => r.request().method() === 'PUT' && /\/api\/notifications\/.+\/read$/.test(r.url()));
      await list.locator('li', { hasText: 'nightly-import' }).getByRole('button', { name: /^Mark read/ }).click();
      t.equal((await marked).status(), 200);
      await list.locator('li', { hasText: 'nightly-import' }).getByRole('button', { name: /^Mark read/ }).waitFor({ state: 'detached' });
      t.equal(await unread(stand), before - 1, 'one fewer unread on the server');
      await until(async () => (await page.locator('.bell-count').textContent().catch(() => null)) === String(before - 1), 'the bell to follow');

      const all = page.waitForResponse((r) => r.url().endsWith('/api/notifications/read-all'));
      await page.getByRole('button', { name: 'Mark all read' }).click();
      t.equal((await all).status(), 200);
      await page.getByText(/^Marked \d+ read$/).waitFor();
      t.equal(await unread(stand), 0, 'nothing unread on the server');
      await page.getByRole('button', { name: 'Mark all read' }).waitFor({ state: 'detached' });

      t.same(await seriousViolations(page), []);
      await page.setViewportSize({ width: 375, height: 800 });
      // The charts follow their box through a ResizeObserver, a frame or two after the resize.
      t.ok(await until(() => fits(page), 'the page to fit 375 px', 5000), 'no sideways scrolling at phone width');
      t.same(problems, []);
    });

    await t.test('a viewer sees the pages but no avatar or directory controls', async (t) => {
      const created = await stand.api('POST', '/api/users', { username: 'vera', password: 'viewer-password-1', role: 'viewer' });
      t.equal(created.status, 201, JSON.stringify(created.body));
      const { page, problems } = await openPage(browser, stand);
      await logIn(page, 'vera', 'viewer-password-1');
      await page.getByText('Agents online').waitFor();
      await page.getByRole('heading', { name: 'Recent activity' }).waitFor();

      await page.goto('/agents');
      await page.getByRole('region', { name: 'Agent list' }).getByRole('link', { name: 'main' }).click();
      await page.getByRole('heading', { name: 'Metrics' }).waitFor();
      await page.getByRole('heading', { name: 'About' }).waitFor();
      t.equal(await page.getByRole('heading', { name: 'Avatar' }).count(), 0, 'no avatar controls');
      t.equal(await page.getByRole('heading', { name: 'Additional directories' }).count(), 0, 'no directories editor');
      t.equal(await page.locator('input[type=file]').count(), 0);
      t.equal(await page.getByRole('heading', { name: 'Log' }).count(), 0, 'logs are for operators');
      t.same(await seriousViolations(page), []);

      await page.goto('/notifications');
      await page.getByRole('list', { name: 'Notification list' }).getByText('nightly-import').waitFor();
      t.same(problems, []);
    });
  });
}
