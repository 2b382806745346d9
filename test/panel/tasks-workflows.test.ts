// The tasks and workflows pages in a real browser against a real daemon (fake CLIs): every write
// through the UI, checked through the API. A `[[hold]]` prompt keeps a task running until it is
// cancelled; a task is made to wait the way its CLI would, by its parent's token calling the
// internal API's /tasks/ask_parent.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { homePaths } from '../../store/index.js';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations } from '../fixtures/panel-browser.js';
import { until } from '../fixtures/until.js';

const HELLO = 'name: Hello\ndescription: Greets someone\nvariables: { who: "world" }\nsteps:\n  - { id: ask, type: ask_agent, agent: main, prompt: "greet $who" }\n  - { id: tell, type: notify, message: "said $steps.ask.output" }\n';
const WAITER = 'name: Waiter\nsteps:\n  - { id: q, type: wait_for_reply, message: "Go on?" }\n';
const BROKEN = 'name: Broken\nsteps: [ {id: x, type: nonsense} ]\n';

if (SKIP_REASON) {
  t.plan(0, SKIP_REASON);
} else {
  await t.test('tasks and workflows pages: create, finish, cancel, delete, answer; definitions, load errors, runs; viewer; phone; axe', async (t) => {
    const stand = await panelStand(t, { config: { tasks: { max_parallel: 4 } } });
    const dir = join(stand.root, 'workflows');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'hello.yaml'), HELLO);
    writeFileSync(join(dir, 'waiter.yaml'), WAITER);
    writeFileSync(join(dir, 'broken.yaml'), BROKEN);
    await until('the workflows are loaded', async () => (await stand.api('GET', '/api/workflows')).body.definitions?.length === 3);
    const mainToken = (JSON.parse(readFileSync(homePaths(stand.root).mainAgentTokenFile, 'utf8')) as { token: string }).token;
    const askParent = (task_id: string, question: string) =>
      fetch(`http://127.0.0.1:${stand.internalPort}/tasks/ask_parent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${mainToken}`, 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ task_id, question }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { answer?: string; success?: boolean } }));
    const taskNamed = async (name: string) => ((await stand.api('GET', '/api/tasks?limit=200')).body as { task_id: string; name: string; status: string }[]).find((x) => x.name === name);
    const browser = await openBrowser(t);

    await t.test('admin: tasks', async (t) => {
      const { page, problems } = await openPage(browser, stand);
      await logIn(page, 'admin', stand.adminPassword);
      await page.goto('/tasks');
      await page.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor();

      const create = async (name: string, prompt: string) => {
        await page.getByRole('button', { name: 'New task' }).click();
        const dialog = page.getByRole('dialog', { name: 'New task' });
        await dialog.getByLabel('Name').fill(name);
        await dialog.getByLabel('What the task should do').fill(prompt);
        await dialog.getByRole('button', { name: 'Create task' }).click();
        await dialog.waitFor({ state: 'hidden' });
      };
      // Created, and seen finishing (the result's chat_message refreshes the list).
      await create('quick', 'Say hello');
      await page.getByRole('row', { name: /quick.*Completed/ }).waitFor({ timeout: 30_000 });
      t.match(await taskNamed('quick'), { status: 'done' }, 'done through the API too');
      await page.getByRole('button', { name: 'Details of quick' }).first().click();
      const details = page.getByRole('dialog', { name: 'Details of quick' });
      await details.getByText('Hello from the CLI').waitFor();
      t.ok(await details.getByText('Say hello').isVisible(), 'the prompt is shown');
      await details.getByRole('button', { name: 'Close' }).click();

      // A slow one is cancelled, then deleted.
      await create('slow', 'work slowly [[hold]]');
      await page.getByRole('row', { name: /slow.*Running/ }).waitFor();
      await page.getByRole('button', { name: 'Cancel slow' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('row', { name: /slow.*Cancelled/ }).waitFor();
      t.match(await taskNamed('slow'), { status: 'cancelled' });
      await page.getByRole('button', { name: 'Delete slow' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('row', { name: /slow/ }).waitFor({ state: 'detached' });
      t.notOk(await taskNamed('slow'), 'deleted through the API too');

      // A task asks its parent; the admin answers from the page.
      await create('asker', 'ask me [[hold]]');
      const asker = await until('the asker exists', () => taskNamed('asker'));
      const asking = askParent(asker.task_id, 'Which **year**?');
      await page.getByRole('heading', { name: 'Waiting for an answer' }).waitFor();
      await page.locator('.task-questions strong', { hasText: 'year' }).waitFor();
      await page.getByRole('row', { name: /asker.*Waiting/ }).waitFor();
      await page.getByLabel('Answer').fill('2025');
      await page.getByRole('button', { name: 'Send answer' }).click();
      t.same((await asking).body, { success: true, answer: '2025', status: 'running' }, "the task's ask_parent got the answer");
      t.match(await taskNamed('asker'), { status: 'running' });
      await page.getByRole('heading', { name: 'Waiting for an answer' }).waitFor({ state: 'detached' });
      await stand.api('POST', `/api/tasks/${asker.task_id}/cancel`);

      // Filter tabs.
      await page.getByRole('button', { name: 'Completed', exact: true }).click();
      // The All tab's rows stay until the filtered list arrives, and "quick" is on both: wait for the others to go first.
      const notCompleted = page.getByRole('row').filter({ hasText: /Running|Waiting|Cancelled|Failed/ });
      await notCompleted.first().waitFor({ state: 'detached' });
      await page.getByRole('row', { name: /quick/ }).waitFor();
      // The asker may have finished after its answer, or been cancelled first: either way the tab shows only what is completed.
      t.equal(await notCompleted.count(), 0, 'the completed tab shows completed tasks only');
      await page.getByRole('button', { name: 'All', exact: true }).click();
      t.same(await seriousViolations(page), [], 'axe: tasks');
      await page.setViewportSize({ width: 375, height: 800 });
      t.ok(await page.evaluate('document.documentElement.scrollWidth <= 375'), 'no horizontal overflow at phone width');
      t.same(problems, []);
      await page.context().close();
    });

    await t.test('admin: workflows', async (t) => {
      const { page, problems } = await openPage(browser, stand);
      await logIn(page, 'admin', stand.adminPassword);
      await page.goto('/workflows');
      await page.getByRole('heading', { level: 1, name: 'Workflows' }).waitFor();
      await page.getByRole('alert').filter({ hasText: 'broken.yaml' }).waitFor();
      t.ok(await page.getByRole('row', { name: /hello.*Hello.*Greets someone.*2/ }).isVisible(), 'a definition with its description and step count');

      await page.getByRole('button', { name: 'Start hello' }).click();
      const start = page.getByRole('dialog', { name: 'Start workflow hello' });
      t.equal(await start.getByLabel('Variable 1 name').inputValue(), 'who', 'the declared variable is offered');
      await start.getByLabel('Variable 1 value').fill('Ann');
      await start.getByRole('button', { name: 'Start run' }).click();
      const run = page.getByRole('dialog', { name: /^Run / });
      await run.getByRole('row', { name: /tell.*notify.*Completed/ }).waitFor({ timeout: 30_000 });
      t.ok(await run.getByText('Hello from the CLI').first().isVisible(), "a step's output");
      const runs = (await stand.api('GET', '/api/workflows')).body.runs as { run_id: string; workflow_id: string; status: string }[];
      t.match(runs, [{ workflow_id: 'hello', status: 'completed' }]);
      t.match((await stand.api('GET', `/api/workflows/runs/${runs[0]!.run_id}`)).body, { steps: [{ id: 'ask', status: 'completed', output: 'Hello from the CLI' }, { id: 'tell', status: 'completed' }] });
      await run.getByRole('button', { name: 'Close' }).click();

      // A waiting run is cancelled from the runs table.
      await page.getByRole('button', { name: 'Start waiter' }).click();
      await page.getByRole('dialog', { name: 'Start workflow waiter' }).getByRole('button', { name: 'Start run' }).click();
      await page.getByRole('dialog', { name: /^Run / }).getByRole('row', { name: /q.*Waiting/ }).waitFor();
      await page.getByRole('dialog', { name: /^Run / }).getByRole('button', { name: 'Close' }).click();
      await page.getByRole('row', { name: /Waiter.*Waiting/ }).waitFor();
      await page.getByRole('button', { name: /^Cancel run / }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('row', { name: /Waiter.*Cancelled/ }).waitFor();
      t.match(((await stand.api('GET', '/api/workflows')).body.runs as unknown[])[0], { workflow_id: 'waiter', status: 'cancelled' });
      t.same(await seriousViolations(page), [], 'axe: workflows');
      await page.setViewportSize({ width: 375, height: 800 });
      t.ok(await page.evaluate('document.documentElement.scrollWidth <= 375'), 'no horizontal overflow at phone width');
      t.same(problems, []);
      await page.context().close();
    });

    await t.test('viewer: sees both pages, no write control', async (t) => {
      t.equal((await stand.api('POST', '/api/users', { username: 'vic', password: 'password-123', role: 'viewer' })).status, 201);
      const held = (await stand.api('POST', '/api/tasks', { name: 'held', agent: 'main', prompt: 'hold on [[hold]]' })).body.task_id as string;
      const asking = askParent(held, 'Shall I?');
      await until('the held task waits', async () => (await taskNamed('held'))?.status === 'waiting');
      const wait = (await stand.api('POST', '/api/workflows/waiter/run', {})).body.run_id as string;
      const { page, problems } = await openPage(browser, stand);
      await logIn(page, 'vic', 'password-123');
      await page.goto('/tasks');
      await page.getByRole('row', { name: /held.*Waiting/ }).waitFor();
      await page.getByRole('row', { name: /quick.*Completed/ }).waitFor();
      await page.getByText('Shall I?').first().waitFor();
      for (const name of ['New task', 'Send answer', /^Cancel (held|task)/, /^Delete/]) t.equal(await page.getByRole('button', { name }).count(), 0, `no ${name} button`);
      t.equal(await page.getByLabel('Answer').count(), 0, 'no answer form');
      t.same(await seriousViolations(page), [], 'axe: tasks as viewer');
      await page.goto('/workflows');
      await page.getByRole('row', { name: /Waiter.*Waiting/ }).waitFor();
      for (const name of [/^Start/, /^Cancel run/]) t.equal(await page.getByRole('button', { name }).count(), 0, `no ${name} button`);
      t.same(await seriousViolations(page), [], 'axe: workflows as viewer');
      t.same(problems, []);
      await page.context().close();
      await stand.api('POST', `/api/workflows/runs/${wait}/cancel`);
      await stand.api('POST', `/api/tasks/${held}/cancel`);
      await asking;
    });
  });
}
