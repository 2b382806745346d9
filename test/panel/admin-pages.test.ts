import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOTP } from 'otpauth';
import type { BrowserContext, Page } from 'playwright-core';
import t from 'tap';
import { STATIC_TOKEN, SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations } from '../fixtures/panel-browser.js';

/*
 * The users, audit, settings and profile pages in a real browser against a real daemon: every write
 * made through the UI and checked through the API. The daemon trusts 127.0.0.1 as a proxy so each
 * sign-in can name its own client address: the per-address login limit (5 a minute) would otherwise
 * stop the sixth sign-in of the run. SHOTS=<dir> saves screenshots of the pages there, to look at.
 */

let addr = 10;
/** The next sign-ins of this context come from a new client address. */
const newAddress = (context: BrowserContext) => context.setExtraHTTPHeaders({ 'x-forwarded-for': `10.77.0.${addr++}` });

const heading = (page: Page, name: string) => page.getByRole('heading', { level: 1, name }).waitFor();

if (SKIP_REASON) {
  t.plan(0, SKIP_REASON);
} else {
  const stand = await panelStand(t, { config: { api: { enabled: true, host: '127.0.0.1', port: 0, token: STATIC_TOKEN, trusted_proxies: ['127.0.0.1'] } } });
  const browser = await openBrowser(t);
  const users = async () => (await stand.api<{ username: string; role: string; allowed_agents: string[]; active: boolean; totp_enabled: boolean }[]>('GET', '/api/users')).body;
  const user = async (name: string) => (await users()).find((u) => u.username === name);

  await t.test('an admin creates, edits, deactivates and deletes users', async (t) => {
    const { page, context, problems } = await openPage(browser, stand, { allow: [/http 409: DELETE \S+\/api\/users\/admin$/, /^console: Failed to load resource: .* 409 \(Conflict\)$/] });
    await newAddress(context);
    await logIn(page, 'admin', stand.adminPassword);
    await page.getByRole('link', { name: 'Users', exact: true }).click();
    await heading(page, 'Users');
    await page.getByRole('cell', { name: /^admin/ }).waitFor();
    t.same(await seriousViolations(page), [], 'users page: no serious accessibility violation');

    const create = async (name: string, role: string, password: string, agents?: string[]) => {
      await page.getByRole('button', { name: 'Add user' }).click();
      const dialog = page.getByRole('dialog', { name: 'New user' });
      await dialog.getByLabel('Username').fill(name);
      await dialog.getByLabel('Display name').fill(`${name} display`);
      await dialog.getByLabel('Password').fill(password);
      await dialog.getByLabel('Role').selectOption(role);
      if (agents) {
        await dialog.getByLabel('All agents').uncheck();
        for (const a of agents) await dialog.getByRole('checkbox', { name: a, exact: true }).check();
        // The first agent is preselected when "all" is unticked: keep only the chosen ones.
        for (const box of await dialog.locator('input[name="agent"]').all()) if (!agents.includes(await box.getAttribute('value') ?? '')) await box.uncheck();
      }
      if (await page.getByRole('dialog').getByRole('heading', { name: 'New user' }).isVisible()) t.same(await seriousViolations(page), [], 'user dialog: no serious accessibility violation');
      await dialog.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('cell', { name, exact: true }).or(page.getByRole('cell', { name: new RegExp(`^${name}`) })).first().waitFor();
    };
    await create('vera', 'viewer', 'viewer-pass-1');
    await create('otto', 'operator', 'operator-pass-1', ['main']);
    await create('dora', 'viewer', 'dora-pass-12');
    t.match(await user('vera'), { role: 'viewer', allowed_agents: [], active: true });
    t.match(await user('otto'), { role: 'operator', allowed_agents: ['main'], active: true });

    // Role change and deactivation through the edit dialog.
    await page.getByRole('button', { name: 'Edit dora' }).click();
    let dialog = page.getByRole('dialog', { name: 'Edit user dora' });
    await dialog.getByLabel('Role').selectOption('operator');
    await dialog.getByLabel('Active (may sign in)').uncheck();
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByText('User dora saved.').waitFor();
    t.match(await user('dora'), { role: 'operator', active: false });
    await page.getByRole('row', { name: /dora/ }).getByText('Inactive').waitFor();

    // Delete, after the confirmation.
    await page.getByRole('button', { name: 'Delete dora' }).click();
    await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
    await page.getByText('User dora deleted.').waitFor();
    t.equal(await user('dora'), undefined, 'dora is gone');

    // The last admin cannot go: the server's refusal is shown.
    await page.getByRole('button', { name: 'Delete admin' }).click();
    await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('alert').getByText(/last active admin/).waitFor();
    t.ok(await user('admin'), 'the admin is still there');

    // A phone-width screen scrolls the table, not the page.
    await page.setViewportSize({ width: 375, height: 800 });
    t.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= 375, 'no horizontal overflow at 375 px');
    await page.setViewportSize({ width: 1280, height: 900 });

    // The audit log shows these actions.
    await page.getByRole('link', { name: 'Audit log', exact: true }).click();
    await heading(page, 'Audit log');
    await page.getByRole('cell', { name: 'POST /api/users' }).first().waitFor();
    await page.getByLabel('Filter').fill('dora');
    await page.getByRole('cell', { name: 'DELETE /api/users/:username' }).waitFor();
    await page.getByRole('cell', { name: 'PUT /api/users/:username' }).waitFor();
    t.equal(await page.getByRole('cell', { name: 'vera', exact: true }).count(), 0, 'the filter hides the other entries');
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/audit.png`, fullPage: true });
    t.same(await seriousViolations(page), [], 'audit page: no serious accessibility violation');
    t.same(problems, [], 'no console error or failed request');
    await context.close();
  });

  await t.test('settings: instance name, RAG, config, export and import', async (t) => {
    const { page, context, problems } = await openPage(browser, stand);
    await newAddress(context);
    await logIn(page, 'admin', stand.adminPassword);
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await heading(page, 'Settings');

    await page.getByLabel('Instance name').fill('Test Lab');
    await page.getByRole('button', { name: 'Save' }).first().click();
    await page.getByText('Instance renamed.').waitFor();
    await page.locator('.topbar .instance', { hasText: 'Test Lab' }).waitFor();
    t.equal((await stand.api('GET', '/api/system/status')).body.instance_name, 'Test Lab');

    // The configuration, with the API token masked.
    await page.locator('.config-tree summary', { hasText: /^api \(/ }).click();
    await page.getByRole('definition').filter({ hasText: '***' }).first().waitFor();
    t.notOk((await page.content()).includes(STATIC_TOKEN), 'the API token is never on the page');

    // RAG: on, saved, and the restart asked for.
    t.equal((await stand.api('GET', '/api/rag/status')).body.enabled, false);
    await page.getByLabel('Enable RAG').check();
    await page.locator('.rag-form').getByRole('button', { name: 'Save' }).click();
    await page.getByText('Restart svc for the new RAG settings').waitFor();
    // Written to config.json, for the next start.
    t.equal(JSON.parse(readFileSync(join(stand.root, 'config', 'config.json'), 'utf8')).rag.enabled, true, 'the RAG setting is saved');

    // Export as a download holding the users.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download export' }).click()]);
    t.match(download.suggestedFilename(), /^svc-export-\d{4}-\d\d-\d\d\.json$/);
    const exported = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { users: { username: string }[] };
    t.ok(['admin', 'vera', 'otto'].every((n) => exported.users.some((u) => u.username === n)), 'the export holds the users');
    await page.getByText(/Export downloaded: .* users\./).waitFor();

    // Import: a file with one new user; the counts are shown.
    const file = join(stand.root, 'import.json');
    writeFileSync(file, JSON.stringify({ users: [{ username: 'ivan', role: 'viewer' }, { username: 'vera', role: 'viewer' }] }));
    await page.getByLabel('Export file to import (JSON)').setInputFiles(file);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Imported: 0 cron jobs, 0 webhooks, 1 users added; 1 already existing skipped.').waitFor();
    t.match(await user('ivan'), { role: 'viewer' });

    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/settings.png`, fullPage: true });
    await page.locator('.config-tree summary', { hasText: /^panel \(/ }).click();
    await page.setViewportSize({ width: 375, height: 800 });
    t.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= 375, 'settings: no horizontal overflow at 375 px');
    await page.setViewportSize({ width: 1280, height: 900 });
    t.same(await seriousViolations(page), [], 'settings page: no serious accessibility violation');
    t.same(problems, [], 'no console error or failed request');
    await context.close();
  });

  await t.test('a viewer sees settings and their profile read-only, no users or audit', async (t) => {
    const { page, context, problems } = await openPage(browser, stand);
    await newAddress(context);
    await logIn(page, 'vera', 'viewer-pass-1');
    const nav = page.locator('nav#nav');
    t.equal(await nav.getByRole('link', { name: 'Users', exact: true }).count(), 0, 'no Users link');
    t.equal(await nav.getByRole('link', { name: 'Audit log', exact: true }).count(), 0, 'no Audit link');
    await nav.getByRole('link', { name: 'Settings', exact: true }).click();
    await heading(page, 'Settings');
    await page.getByText('Test Lab', { exact: true }).first().waitFor();
    await page.getByText('Read-only: your role cannot change this.').waitFor();
    t.equal(await page.locator('main form, main input, main select, main button').count(), 0, 'no write control on the settings page');
    t.same(await seriousViolations(page), [], 'viewer settings: no serious accessibility violation');
    await page.goto('/users');
    await page.getByText('Only admins can manage users.').waitFor();
    t.equal(await page.getByRole('button', { name: 'Add user' }).count(), 0);
    await page.goto('/profile');
    await heading(page, 'Profile');
    await page.getByRole('definition').filter({ hasText: 'vera' }).first().waitFor();
    await page.setViewportSize({ width: 375, height: 800 });
    t.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= 375, 'profile: no horizontal overflow at 375 px');
    await page.setViewportSize({ width: 1280, height: 900 });
    t.same(await seriousViolations(page), [], 'profile page: no serious accessibility violation');
    t.same(problems, [], 'no console error or failed request');
    await context.close();
  });

  await t.test('profile: 2FA on, a 2FA sign-in, 2FA off, a new password', async (t) => {
    const { page, context, problems } = await openPage(browser, stand);
    await newAddress(context);
    await logIn(page, 'otto', 'operator-pass-1');
    await page.goto('/profile');
    await heading(page, 'Profile');
    await page.getByRole('button', { name: 'Set up 2FA' }).click();
    await page.getByRole('img', { name: 'QR code to add svc to your authenticator app' }).waitFor();
    const secret = (await page.locator('code[data-secret]').textContent())!.trim();
    t.match(secret, /^[A-Z2-7]{16,}$/, 'the secret is shown as text');
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/2fa.png`, fullPage: true });
    t.same(await seriousViolations(page), [], '2FA setup: no serious accessibility violation');
    // The previous step's code (the window allows one): the sign-in below then has a newer one to use.
    await page.getByLabel('Code from your authenticator app').fill(new TOTP({ secret }).generate({ timestamp: Date.now() - 30_000 }));
    await page.getByRole('button', { name: 'Turn on 2FA' }).click();
    await page.getByText('2FA is on.').waitFor();
    t.equal((await user('otto'))?.totp_enabled, true);

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.locator('input[name="username"]').waitFor();
    await newAddress(context);
    await logIn(page, 'otto', 'operator-pass-1', secret);
    await page.goto('/profile');
    await page.getByLabel('Code from your authenticator app').fill(new TOTP({ secret }).generate({ timestamp: Date.now() + 30_000 }));
    await page.getByLabel('Password', { exact: true }).fill('operator-pass-1');
    await page.getByRole('button', { name: 'Turn off 2FA' }).click();
    await page.getByText('2FA is off.').waitFor();
    t.equal((await user('otto'))?.totp_enabled, false);

    await page.getByLabel('Current password').fill('operator-pass-1');
    await page.getByRole('textbox', { name: /^New password/ }).fill('operator-pass-2');
    await page.getByLabel('Repeat the new password').fill('operator-pass-2');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.locator('input[name="username"]').waitFor();
    await newAddress(context);
    await logIn(page, 'otto', 'operator-pass-2');
    await page.goto('/profile');
    await page.getByRole('definition').filter({ hasText: 'main' }).first().waitFor();
    t.same(problems, [], 'no console error or failed request');
    await context.close();
  });

  await t.test('an admin turns 2FA off for a user who lost the phone', async (t) => {
    // vera turns 2FA on herself, through the API with her own bearer token.
    const base = { 'content-type': 'application/json', connection: 'close' };
    const login = await (await fetch(`${stand.url}/api/auth/login`, { method: 'POST', headers: base, body: JSON.stringify({ username: 'vera', password: 'viewer-pass-1' }) })).json() as { access_token: string };
    const headers = { ...base, authorization: `Bearer ${login.access_token}` };
    const setup = await (await fetch(`${stand.url}/api/auth/2fa/setup`, { method: 'POST', headers, body: '{}' })).json() as { secret: string };
    const verified = await fetch(`${stand.url}/api/auth/2fa/verify`, { method: 'POST', headers, body: JSON.stringify({ code: new TOTP({ secret: setup.secret }).generate() }) });
    t.equal(verified.status, 200);
    t.equal((await user('vera'))?.totp_enabled, true);

    const { page, context, problems } = await openPage(browser, stand);
    await newAddress(context);
    await logIn(page, 'admin', stand.adminPassword);
    await page.goto('/users');
    await page.getByRole('row', { name: /vera/ }).getByText('On', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit vera' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit user vera' });
    await dialog.getByLabel(/Turn off two-factor authentication/).check();
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByText('User vera saved.').waitFor();
    t.equal((await user('vera'))?.totp_enabled, false, '2FA is off for vera');
    t.same(problems, [], 'no console error or failed request');
    await context.close();
  });

  await t.test('in Russian, dark: every route, no English title or heading left', async (t) => {
    const { page, context, problems } = await openPage(browser, stand, { locale: 'ru-RU', colorScheme: 'dark' });
    await newAddress(context);
    await logIn(page, 'admin', stand.adminPassword);
    // Each route with its Russian title and the English one it must not show.
    const routes = [
      ['/', 'Обзор', 'Dashboard'],
      ['/agents', 'Агенты', 'Agents'],
      ['/agents/main', 'main', 'Metrics'],
      ['/chat/main', 'Чат', 'Chat'],
      ['/tasks', 'Задачи', 'Tasks'],
      ['/workflows', 'Воркфлоу', 'Workflows'],
      ['/cron', 'Задания cron', 'Cron jobs'],
      ['/webhooks', 'Вебхуки', 'Webhooks'],
      ['/notifications', 'Уведомления', 'Notifications'],
      ['/memory', 'Память', 'Memory'],
      ['/skills', 'Навыки', 'Skills'],
      ['/user-files', 'Файлы', 'Files'],
      ['/users', 'Пользователи', 'Users'],
      ['/audit', 'Журнал аудита', 'Audit log'],
      ['/settings', 'Настройки', 'Settings'],
      ['/profile', 'Профиль', 'Profile'],
    ] as const;
    // Names that are the same in either language: agent and file names, acronyms, product names.
    const SAME = /^(main|MAINMEMORY\.md|RAG|API|svc|cron|Markdown|2FA|TOTP|JSON|URL|HMAC|CPU|RAM|id)$/;
    for (const [path, title, english] of routes) {
      await page.goto(path);
      await heading(page, title);
      await page.waitForLoadState('networkidle');
      const headings = await page.locator('main h1, main h2, main h3, main th, main legend, main label').allInnerTexts();
      const leftovers = headings
        .map((h) => h.trim())
        .filter((h) => h && !/[а-яё]/i.test(h))
        .filter((h) => !h.split(/[\s·:()/,]+/).filter(Boolean).every((w) => SAME.test(w) || !/[a-z]/i.test(w)));
      t.same(leftovers, [], `${path}: every heading, column and label is Russian`);
      t.equal(await page.getByRole('heading', { name: english, exact: true }).count(), 0, `${path}: no "${english}" heading`);
      if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/ru${path.replace(/\//g, '-')}.png`, fullPage: true });
      t.same(await seriousViolations(page), [], `${path} in Russian, dark: no serious accessibility violation`);
    }
    t.same(problems, [], 'no console error or failed request');
    await context.close();
  });
}
