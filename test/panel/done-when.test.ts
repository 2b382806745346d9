// Issue 23's "done when", as a user meets it: `svc start` on a fresh home prints the panel's URL;
// in chromium the admin signs in, turns 2FA on and signs in with it, chats with the agent and
// watches the answer stream in, creates a cron job and a webhook, reads the notification of a
// failed task; a viewer, in a second browser context, sees the same data and no way to change it.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { TOTP } from 'otpauth';
import { exited, freePortHome, startSvc, svc, until } from '../bin/cli-helpers.js';
import { SKIP_REASON, logIn, openBrowser, openPage, seriousViolations } from '../fixtures/panel-browser.js';
import { tempHome } from '../fixtures/temp-home.js';

const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

if (SKIP_REASON) t.plan(0, SKIP_REASON);
else {
  await t.test('fresh start to a viewer who cannot change anything', async (t) => {
    const scratch = tempHome(t);
    const home = join(scratch.dir, 'home');
    // The embedded defaults (the API off), but the panel's own port free for this test.
    freePortHome(home, { panel: { port: await freePort() } });
    const child = startSvc(home, ['start'], {
      SVC_PANEL_LISTEN: '',
      PATH: `${BIN}:${process.env.PATH}`,
      FAKE_CLI_REPLY: 'The answer arrives piece by piece, like this.',
      FAKE_CLI_CHUNKS: '4',
      FAKE_CLI_DELAY_MS: '400',
    });
    scratch.beforeRemove(async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited(child);
      }
    });
    const url = await until(() => `the panel URL in the banner:\n${child.output()}`, () => /^\s+panel\s+(http:\/\/127\.0\.0\.1:\d+\/)/m.exec(child.output())?.[1], 60_000);
    const passwordFile = /password in ([^\s;]+)/.exec(child.output())?.[1];
    t.ok(passwordFile, 'the banner says where the admin password is');
    const password = readFileSync(passwordFile!, 'utf8').trim();

    const browser = await openBrowser(t);
    // The fixtures' recorder: console errors, page errors, failed requests and HTTP errors.
    const { page, problems } = await openPage(browser, { url });
    page.setDefaultTimeout(20_000);

    // Sign in, turn 2FA on, sign in again with it.
    await logIn(page, 'admin', password);
    await page.goto('/profile');
    await page.getByRole('button', { name: 'Set up 2FA' }).click();
    await page.getByRole('img', { name: 'QR code to add svc to your authenticator app' }).waitFor();
    const secret = (await page.locator('code[data-secret]').textContent())!.trim();
    await page.getByLabel('Code from your authenticator app').fill(new TOTP({ secret }).generate({ timestamp: Date.now() - 30_000 }));
    await page.getByRole('button', { name: 'Turn on 2FA' }).click();
    await page.getByText('2FA is on.').waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.locator('input[name="username"]').waitFor();
    await logIn(page, 'admin', password, secret);

    // Chat: the answer streams in; at least two partial texts are seen before the final one.
    await page.goto('/chat/main');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.waitForURL(/session=/);
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as { __partials?: string[] }).__partials = seen;
      new (window as any).MutationObserver(() => {
        const live = document.querySelector('.chat-live .markdown');
        const text = live?.textContent ?? '';
        if (text && seen[seen.length - 1] !== text) seen.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await page.getByLabel('Message').fill('Tell me something');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.chat-msg-agent:not(.chat-live)', { hasText: 'like this.' }).waitFor();
    const partials = (await page.evaluate(() => (window as { __partials?: string[] }).__partials)) as string[];
    t.ok(partials.length >= 2, `the answer streamed in pieces (${JSON.stringify(partials)})`);

    // A cron job and a webhook, through their forms.
    await page.getByRole('link', { name: 'Cron jobs', exact: true }).click();
    await page.getByRole('button', { name: 'New cron job' }).click();
    let dialog = page.getByRole('dialog', { name: 'New cron job' });
    await dialog.getByLabel('Title', { exact: true }).fill('Morning digest');
    await dialog.getByLabel('Schedule').fill('0 8 * * *');
    await dialog.getByLabel('Prompt / description').fill('Summarise the news');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: 'Details: Morning digest' }).waitFor();
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('button', { name: 'New webhook' }).click();
    dialog = page.getByRole('dialog', { name: 'New webhook' });
    await dialog.getByLabel('Name', { exact: true }).fill('Deploys');
    await dialog.getByLabel('Prompt template').fill('Deployed {{service}}');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('button', { name: 'Details: Deploys' }).waitFor();

    // A task that fails; its notification is read on the notifications page.
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.getByRole('button', { name: 'New task' }).click();
    dialog = page.getByRole('dialog', { name: 'New task' });
    await dialog.getByLabel('Name').fill('broken-import');
    await dialog.getByLabel('What the task should do').fill('[[fail]] import the data');
    await dialog.getByRole('button', { name: 'Create task' }).click();
    await page.getByRole('row', { name: /broken-import.*Failed/ }).waitFor({ timeout: 30_000 });
    await page.getByRole('link', { name: /^Notifications/ }).click();
    const list = page.getByRole('list', { name: 'Notification list' });
    const item = list.locator('li', { hasText: 'broken-import' }).first();
    await item.waitFor();
    await item.getByRole('button', { name: /^Mark read/ }).click();
    await item.getByRole('button', { name: /^Mark read/ }).waitFor({ state: 'detached' });

    // A viewer, made on the users page, in a second browser context.
    await page.getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('button', { name: 'Add user' }).click();
    dialog = page.getByRole('dialog', { name: 'New user' });
    await dialog.getByLabel('Username').fill('vic');
    await dialog.getByLabel('Display name').fill('Vic');
    await dialog.getByLabel('Password').fill('viewer-password-1');
    await dialog.getByLabel('Role').selectOption('viewer');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('cell', { name: /^vic/ }).first().waitFor();
    t.same(problems, [], 'the admin saw no console error, failed request or HTTP error');

    const { page: viewer, problems: viewerProblems } = await openPage(browser, { url });
    viewer.setDefaultTimeout(20_000);
    await logIn(viewer, 'vic', 'viewer-password-1');
    const noWrites = async (where: string) => {
      const writes = await viewer.getByRole('button', { name: /^(New|Add|Create|Save|Edit|Delete|Pause|Resume|Run now|Cancel|Send|Upload|Mark)\b/ }).count();
      t.equal(writes, 0, `${where}: no write control`);
      t.equal(await viewer.locator('main textarea').count(), 0, `${where}: no editor`);
    };
    await viewer.goto('/cron');
    await viewer.getByRole('button', { name: 'Details: Morning digest' }).waitFor();
    await noWrites('cron jobs');
    await viewer.goto('/webhooks');
    await viewer.getByRole('button', { name: 'Details: Deploys' }).waitFor();
    await noWrites('webhooks');
    await viewer.goto('/tasks');
    await viewer.getByRole('row', { name: /broken-import.*Failed/ }).waitFor();
    await noWrites('tasks');
    await viewer.goto('/chat/main');
    await viewer.locator('a[href*="session="]').first().click();
    await viewer.locator('.chat-msg-agent', { hasText: 'like this.' }).first().waitFor();
    await noWrites('chat');
    t.same(await seriousViolations(viewer), [], 'the viewer\'s chat passes the accessibility scan');
    t.same(viewerProblems, [], 'the viewer saw no console error, failed request or HTTP error');

    const stopped = svc(home, ['stop']);
    t.equal(stopped.code, 0, stopped.stderr);
    t.equal(await exited(child), 0);
  });
}
