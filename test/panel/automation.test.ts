// The cron and webhook pages in a real browser against a real daemon: every write made through the
// UI and checked through the API (create, edit, pause, run now and its history, delete, the
// signature test, a real signed call and its history), a viewer who sees the records and no write control, the accessibility scan, and
// the phone width.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { until } from '../fixtures/until.js';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations } from '../fixtures/panel-browser.js';

type Rec = Record<string, unknown> & { id: string };

if (SKIP_REASON) t.plan(0, SKIP_REASON);
else {
  await t.test('cron jobs and webhooks through the UI; a viewer reads them without write controls', async (t) => {
    // The webhook server listens too: a hook made in the UI is then called for real.
    const stand = await panelStand(t, { config: { webhooks: { enabled: true, host: '127.0.0.1' } } });
    const browser = await openBrowser(t);
    const find = async (path: string, key: string, value: string): Promise<Rec | undefined> => ((await stand.api('GET', path)).body as Rec[]).find((r) => r[key] === value);

    // A schedule the server refuses is on purpose: its 400 is the check, and its message is shown.
    const { page, problems } = await openPage(browser, stand, { allow: [/http 400: POST .*\/api\/cron$/, /console: Failed to load resource: the server responded with a status of 400/] });
    await logIn(page, 'admin', stand.adminPassword);

    await t.test('cron: create (the server\'s schedule error shown), edit, pause, run now, history, delete', async (t) => {
      await page.getByRole('link', { name: 'Cron jobs', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Cron jobs' }).waitFor();
      await page.getByRole('button', { name: 'New cron job' }).click();
      let dialog = page.getByRole('dialog', { name: 'New cron job' });
      await dialog.getByLabel('Title', { exact: true }).fill('Nightly report');
      await dialog.getByLabel('Schedule').fill('61 * * * *');
      await dialog.getByLabel('Prompt / description').fill('Summarise the day');
      await dialog.getByLabel('Time zone').fill('Europe/Berlin');
      await dialog.getByRole('button', { name: 'Save' }).click();
      t.match(await dialog.getByRole('alert').innerText(), /schedule/, 'the server\'s validation error is shown');
      await dialog.getByLabel('Schedule').fill('30 2 * * *');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'Details: Nightly report' }).waitFor();
      let job = await find('/api/cron', 'title', 'Nightly report');
      t.match(job, { schedule: '30 2 * * *', agent: 'main', description: 'Summarise the day', timezone: 'Europe/Berlin', enabled: true }, 'created with the fields typed');
      t.same(await seriousViolations(page), [], 'the cron page passes the accessibility scan');

      await page.getByRole('button', { name: 'Edit: Nightly report' }).click();
      dialog = page.getByRole('dialog', { name: 'Edit cron job' });
      t.equal(await dialog.getByLabel('Schedule').inputValue(), '30 2 * * *', 'the form holds the job');
      await dialog.getByLabel('Title', { exact: true }).fill('Morning report');
      await dialog.getByLabel('Schedule').fill('0 8 * * 1-5');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'Details: Morning report' }).waitFor();
      job = await find('/api/cron', 'id', job!.id);
      t.match(job, { title: 'Morning report', schedule: '0 8 * * 1-5' }, 'edited');

      await page.getByRole('button', { name: 'Pause: Morning report' }).click();
      await page.getByRole('button', { name: 'Resume: Morning report' }).waitFor();
      t.match(await find('/api/cron', 'id', job!.id), { enabled: false, status: 'paused' }, 'paused');
      await page.getByRole('button', { name: 'Resume: Morning report' }).click();
      await page.getByRole('button', { name: 'Pause: Morning report' }).waitFor();
      t.match(await find('/api/cron', 'id', job!.id), { enabled: true }, 'resumed');

      await page.getByRole('button', { name: 'Run now: Morning report' }).click();
      await page.getByText('Run started').waitFor();
      await page.getByRole('button', { name: 'Details: Morning report' }).click();
      dialog = page.getByRole('dialog', { name: 'Morning report' });
      await dialog.getByRole('cell', { name: 'manual' }).waitFor();
      const runs = (await stand.api('GET', `/api/cron/${job!.id}/runs`)).body as { trigger: string }[];
      t.equal(runs[0]?.trigger, 'manual', 'the manual run is in the history');
      t.same(await seriousViolations(page), [], 'the run history passes the accessibility scan');
      await dialog.getByRole('button', { name: 'Close' }).click();

      await page.getByRole('button', { name: 'Delete: Morning report' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('button', { name: 'Details: Morning report' }).waitFor({ state: 'detached' });
      t.equal(await find('/api/cron', 'id', job!.id), undefined, 'deleted');
      t.same(problems, [], 'no console error and no failed request');
    });

    await t.test('webhooks: create, edit (secret never echoed), pause, signature test, delete', async (t) => {
      const secret = 'hook-secret-0123456789';
      await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await page.getByRole('button', { name: 'New webhook' }).click();
      let dialog = page.getByRole('dialog', { name: 'New webhook' });
      await dialog.getByLabel('Name', { exact: true }).fill('GitHub pushes');
      await dialog.getByLabel('Mode').selectOption('cron_task');
      await dialog.getByLabel('Prompt template').fill('Push to {{repository}}');
      await dialog.getByLabel('Method').selectOption('hmac');
      await dialog.getByLabel('Secret').fill(secret);
      await dialog.getByLabel('Signature header').fill('X-Hub-Signature-256');
      await dialog.getByLabel('Prefix').fill('sha256=');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'Details: GitHub pushes' }).waitFor();
      let hook = await find('/api/webhooks', 'name', 'GitHub pushes');
      t.match(hook, { agent: 'main', mode: 'cron_task', prompt_template: 'Push to {{repository}}', auth: 'hmac', signature: { header: 'X-Hub-Signature-256', prefix: 'sha256=' }, secret: '***', enabled: true }, 'created with the fields typed, the secret masked');
      t.ok(await page.getByRole('cell', { name: `/hooks/${hook!.id}` }).isVisible(), 'where the webhook server receives it');
      t.same(await seriousViolations(page), [], 'the webhooks page passes the accessibility scan');

      await page.getByRole('button', { name: 'Edit: GitHub pushes' }).click();
      dialog = page.getByRole('dialog', { name: 'Edit webhook' });
      t.equal(await dialog.getByLabel('Secret').inputValue(), '', 'the stored secret is not in the form');
      await dialog.getByLabel('Name', { exact: true }).fill('GitHub events');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'Details: GitHub events' }).waitFor();
      hook = await find('/api/webhooks', 'id', hook!.id);
      t.match(hook, { name: 'GitHub events', auth: 'hmac' }, 'edited');

      await page.getByRole('button', { name: 'Pause: GitHub events' }).click();
      await page.getByRole('button', { name: 'Resume: GitHub events' }).waitFor();
      t.match(await find('/api/webhooks', 'id', hook!.id), { enabled: false }, 'paused');

      await page.getByRole('button', { name: 'Details: GitHub events' }).click();
      dialog = page.getByRole('dialog', { name: 'GitHub events' });
      await dialog.getByText('No calls yet').waitFor();
      const payload = '{"repository":"svc","ref":"main"}';
      await dialog.getByLabel('Payload (raw body)').fill(payload);
      await dialog.getByLabel(/^Signature/).fill(`sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`);
      await dialog.getByRole('button', { name: 'Check' }).click();
      await dialog.getByText('Valid: the signature matches').waitFor();
      await dialog.getByLabel(/^Signature/).fill(`sha256=${createHmac('sha256', 'another-secret').update(payload).digest('hex')}`);
      await dialog.getByRole('button', { name: 'Check' }).click();
      await dialog.getByText('Invalid: the signature does not match').waitFor();
      t.pass('a correct HMAC is valid, a wrong one invalid');
      t.same(await seriousViolations(page), [], 'the details pass the accessibility scan');
      await dialog.getByRole('button', { name: 'Close' }).click();

      // A real call, signed with the secret, once resumed: the details list it with its outcome.
      await page.getByRole('button', { name: 'Resume: GitHub events' }).click();
      await page.getByRole('button', { name: 'Pause: GitHub events' }).waitFor();
      const called = await fetch(`http://127.0.0.1:${stand.webhookPort}/hooks/${hook!.id}`, {
        method: 'POST',
        headers: { connection: 'close', 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}` },
        body: payload,
      });
      t.equal(called.status, 202, 'the signed call is accepted');
      const run = await until('the call to finish', async () => ((await stand.api('GET', `/api/webhooks/${hook!.id}/runs`)).body as { status: string; body_bytes: number }[]).find((r) => r.status !== 'running'));
      t.match(run, { status: 'success', body_bytes: payload.length }, 'the call ran to the end');
      await page.getByRole('button', { name: 'Details: GitHub events' }).click();
      dialog = page.getByRole('dialog', { name: 'GitHub events' });
      const row = dialog.getByRole('region', { name: 'Calls' }).getByRole('row').nth(1);
      await row.getByText('success', { exact: true }).waitFor();
      await row.getByRole('cell', { name: `${payload.length} B` }).waitFor();
      t.equal(await dialog.getByText('No calls yet').count(), 0, 'the history is not empty');
      await dialog.getByRole('button', { name: 'Close' }).click();

      await page.getByRole('button', { name: 'Delete: GitHub events' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('button', { name: 'Details: GitHub events' }).waitFor({ state: 'detached' });
      t.equal(await find('/api/webhooks', 'id', hook!.id), undefined, 'deleted');
      t.same(problems, [], 'no console error and no failed request');
    });

    await t.test('a viewer sees the records and no write control; phone width does not overflow', async (t) => {
      t.equal((await stand.api('POST', '/api/cron', { title: 'Viewer sees me', schedule: '@daily', agent: 'main' })).status, 201);
      t.equal((await stand.api('POST', '/api/webhooks', { name: 'Viewer hook', agent: 'main', secret: 'hook-secret-0123456789' })).status, 201);
      t.equal((await stand.api('POST', '/api/users', { username: 'watcher', password: 'watcher-password-123', role: 'viewer' })).status, 201);
      const v = await openPage(browser, stand, { viewport: { width: 375, height: 800 } });
      await logIn(v.page, 'watcher', 'watcher-password-123');
      await v.page.goto('/cron');
      await v.page.getByRole('button', { name: 'Details: Viewer sees me' }).waitFor();
      t.equal(await v.page.getByRole('button', { name: /^(New cron job|Edit|Pause|Delete|Run now)/ }).count(), 0, 'no write control on cron');
      t.ok(await v.page.evaluate('document.documentElement.scrollWidth <= 375'), 'no horizontal overflow at 375 px');
      t.same(await seriousViolations(v.page), [], 'the viewer\'s cron page passes the accessibility scan');
      await v.page.getByRole('button', { name: 'Details: Viewer sees me' }).click();
      await v.page.getByText('No runs yet').waitFor();
      await v.page.goto('/webhooks');
      await v.page.getByRole('button', { name: 'Details: Viewer hook' }).waitFor();
      t.equal(await v.page.getByRole('button', { name: /^(New webhook|Edit|Pause|Delete)/ }).count(), 0, 'no write control on webhooks');
      await v.page.getByRole('button', { name: 'Details: Viewer hook' }).click();
      await v.page.getByText('No calls yet').waitFor();
      t.equal(await v.page.getByRole('button', { name: 'Check' }).count(), 0, 'no signature test (operator and up)');
      t.ok(await v.page.evaluate('document.documentElement.scrollWidth <= 375'), 'no horizontal overflow at 375 px');
      t.same(v.problems, [], 'no console error and no failed request for the viewer');
    });
  });
}
