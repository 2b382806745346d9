// The memory, skills and files pages in a real browser against a real daemon: a module edited and
// saved, an edit made elsewhere after loading shown as a conflict (nothing overwritten until the user
// chooses), a skill created, edited and deleted, a folder made, a file uploaded, downloaded through
// its signed link and deleted; every write checked through the API; a viewer without access.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations } from '../fixtures/panel-browser.js';

const enc = encodeURIComponent;

if (SKIP_REASON) t.plan(0, SKIP_REASON);
else {
  await t.test('memory, skills and files through the UI; a viewer has none of them', async (t) => {
    const stand = await panelStand(t);
    const browser = await openBrowser(t);
    const moduleText = async (filename: string) => ((await stand.api('GET', `/api/memory/modules/${enc(filename)}`)).body as { content: string }).content;
    // The conflict's 409 is provoked on purpose.
    const { page, problems } = await openPage(browser, stand, { allow: [/http 409: PUT .*\/api\/memory\/modules\//, /console: Failed to load resource: the server responded with a status of 409/] });
    await logIn(page, 'admin', stand.adminPassword);

    await t.test('memory: edit and save a module; a conflict is shown and nothing overwritten until the user chooses', async (t) => {
      t.equal((await stand.api('PUT', `/api/memory/modules/${enc('modules/notes.md')}`, { content: 'one\n' })).status, 200);
      await page.getByRole('link', { name: 'Memory', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Memory' }).waitFor();
      await page.getByRole('button', { name: 'notes', exact: true }).click();
      const editor = page.getByLabel('Content of modules/notes.md');
      await editor.fill('one\ntwo\n');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('status').getByText('Saved', { exact: true }).waitFor();
      t.equal(await moduleText('modules/notes.md'), 'one\ntwo\n', 'saved');
      t.same(await seriousViolations(page), [], 'the memory page passes the accessibility scan');

      // Another tab writes after this one loaded: the save must not overwrite it.
      t.equal((await stand.api('PUT', `/api/memory/modules/${enc('modules/notes.md')}`, { content: 'from another tab\n' })).status, 200);
      await editor.fill('mine\n');
      await page.getByRole('button', { name: 'Save' }).click();
      const conflict = page.getByRole('alert').filter({ hasText: 'changed on the server' });
      await conflict.waitFor();
      t.equal(await conflict.locator('pre').innerText(), 'from another tab\n', "the server's current text is shown");
      t.equal(await moduleText('modules/notes.md'), 'from another tab\n', 'nothing overwritten');
      t.same(await seriousViolations(page), [], 'the conflict passes the accessibility scan');
      await conflict.getByRole('button', { name: 'Overwrite with mine' }).click();
      await conflict.waitFor({ state: 'detached' });
      t.equal(await moduleText('modules/notes.md'), 'mine\n', 'overwritten when the user chose to');

      // And the other choice: take the server's text.
      t.equal((await stand.api('PUT', `/api/memory/modules/${enc('modules/notes.md')}`, { content: 'server wins\n' })).status, 200);
      await editor.fill('lost edit\n');
      await page.getByRole('button', { name: 'Save' }).click();
      await conflict.getByRole('button', { name: 'Reload from server' }).click();
      await conflict.waitFor({ state: 'detached' });
      t.equal(await editor.inputValue(), 'server wins\n', 'reloaded');
      t.equal(await moduleText('modules/notes.md'), 'server wins\n');

      await page.getByRole('button', { name: 'Preview' }).click();
      await page.locator('.markdown').getByText('server wins').waitFor();
      t.same(problems, [], 'no console error and no failed request');
    });

    await t.test('skills: create, edit and delete an agent\'s skill', async (t) => {
      const own = async () => ((await stand.api('GET', '/api/agents/main/skills?scope=own')).body as { name: string }[]).map((s) => s.name);
      await page.getByRole('link', { name: 'Skills', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Skills' }).waitFor();
      await page.getByRole('button', { name: 'New skill' }).click();
      let dialog = page.getByRole('dialog', { name: 'New skill' });
      await dialog.getByLabel(/^Name/).fill('deploy-notes');
      await dialog.getByLabel('Document (Markdown)').fill('# Deploy\n\nCarefully.\n');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'Open: deploy-notes' }).waitFor();
      t.ok((await own()).includes('deploy-notes'), 'created');
      t.same(await seriousViolations(page), [], 'the skills page passes the accessibility scan');

      await page.getByRole('button', { name: 'Edit: deploy-notes' }).click();
      dialog = page.getByRole('dialog', { name: 'deploy-notes' });
      const doc = dialog.getByLabel('Document (Markdown)');
      await doc.waitFor();
      t.equal(await doc.inputValue(), '# Deploy\n\nCarefully.\n', 'the form holds the document');
      await doc.fill('# Deploy\n\nVery carefully.\n');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await dialog.waitFor({ state: 'hidden' });
      t.equal((await stand.api('GET', '/api/agents/main/skills/deploy-notes')).body.content, '# Deploy\n\nVery carefully.\n', 'edited');

      await page.getByRole('button', { name: 'Delete: deploy-notes' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('button', { name: 'Open: deploy-notes' }).waitFor({ state: 'detached' });
      t.notOk((await own()).includes('deploy-notes'), 'deleted');
      t.same(problems, [], 'no console error and no failed request');
    });

    await t.test('skills: a global skill written through the UI; an agent\'s merged view shows it read-only', async (t) => {
      const globals = async () => ((await stand.api('GET', '/api/skills')).body as { name: string }[]).map((s) => s.name);
      await page.getByRole('button', { name: 'Global', exact: true }).click();
      await page.getByRole('heading', { name: 'Global' }).waitFor();
      await page.getByRole('button', { name: 'New skill' }).click();
      const dialog = page.getByRole('dialog', { name: 'New skill' });
      await dialog.getByLabel(/^Name/).fill('house-style');
      await dialog.getByLabel('Document (Markdown)').fill('# House style\n\nShort sentences.\n');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('button', { name: 'Edit: house-style' }).waitFor();
      t.ok((await globals()).includes('house-style'), 'written as a global skill');
      t.match((await stand.api('GET', '/api/skills/house-style')).body, { content: '# House style\n\nShort sentences.\n' }, 'with its document');
      t.notOk(((await stand.api('GET', '/api/agents/main/skills?scope=own')).body as { name: string }[]).some((s) => s.name === 'house-style'), 'not as the agent\'s own');

      // The agent's merged view lists it as global, to open but not to change there.
      await page.getByRole('button', { name: 'Per agent', exact: true }).click();
      const row = page.getByRole('row', { name: /house-style/ });
      await row.getByText('global', { exact: true }).waitFor();
      t.equal(await row.getByRole('button', { name: 'Delete: house-style' }).count(), 0, 'no delete in the agent view');
      await row.getByRole('button', { name: 'Open: house-style' }).first().waitFor();

      await page.getByRole('button', { name: 'Global', exact: true }).click();
      await page.getByRole('button', { name: 'Delete: house-style' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('button', { name: 'Edit: house-style' }).waitFor({ state: 'detached' });
      t.notOk((await globals()).includes('house-style'), 'deleted');
      t.same(problems, [], 'no console error and no failed request');
    });

    await t.test('files: make a folder, upload into it, download through the signed link, delete', async (t) => {
      const list = async (path: string) => ((await stand.api('GET', `/api/files/list?agent=main&path=${enc(path)}`)).body as { name: string; isDir: boolean }[]).map((e) => `${e.name}${e.isDir ? '/' : ''}`);
      await page.getByRole('link', { name: 'Files', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
      await page.getByRole('button', { name: 'New folder' }).click();
      const dialog = page.getByRole('dialog', { name: 'New folder' });
      await dialog.getByLabel('Folder name').fill('reports');
      await dialog.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('button', { name: 'Open folder: reports' }).click();
      t.ok((await list('')).includes('reports/'), 'the folder was made');
      await page.getByRole('navigation', { name: 'Folder path' }).getByRole('button', { name: 'reports' }).waitFor();

      await page.getByLabel('File to upload').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the panel\n') });
      await page.getByText('Uploaded hello.txt').waitFor();
      t.ok((await list('reports')).includes('hello.txt'), 'uploaded into the open folder');
      t.same(await seriousViolations(page), [], 'the files page passes the accessibility scan');

      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download: hello.txt' }).click()]);
      t.equal(download.suggestedFilename(), 'hello.txt');
      t.equal(readFileSync((await download.path())!, 'utf8'), 'hello from the panel\n', 'downloaded through the signed link');
      t.match(download.url(), /\/api\/files\/signed\?/);

      await page.getByRole('button', { name: 'Delete: hello.txt' }).click();
      await page.getByRole('dialog', { name: 'Are you sure?' }).getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('button', { name: 'Download: hello.txt' }).waitFor({ state: 'detached' });
      t.notOk((await list('reports')).includes('hello.txt'), 'deleted');
      t.same(problems, [], 'no console error and no failed request');
    });

    await t.test('a viewer sees these pages with no write control (and no request the server would refuse)', async (t) => {
      t.equal((await stand.api('POST', '/api/users', { username: 'watcher', password: 'watcher-password-123', role: 'viewer' })).status, 201);
      const v = await openPage(browser, stand, { viewport: { width: 375, height: 800 } });
      await logIn(v.page, 'watcher', 'watcher-password-123');
      // Through the navigation (at this width a drawer).
      for (const [path, link, text] of [
        ['/memory', 'Memory', 'Your role cannot read memory.'],
        ['/skills', 'Skills', 'Your role cannot read skills.'],
        ['/user-files', 'Files', 'Your role cannot browse files.'],
      ] as const) {
        await v.page.getByRole('button', { name: 'Menu' }).click();
        await v.page.getByRole('link', { name: link, exact: true }).click();
        await v.page.getByText(text).waitFor();
        t.equal(await v.page.locator('main textarea, main input, main form').count(), 0, `${path}: no form`);
        t.equal(await v.page.getByRole('button', { name: /^(Save|New|Create|Delete|Edit|Upload)/ }).count(), 0, `${path}: no write control`);
        t.ok(await v.page.evaluate('document.documentElement.scrollWidth <= 375'), `${path}: no horizontal overflow at 375 px`);
        t.same(await seriousViolations(v.page), [], `${path}: passes the accessibility scan`);
      }
      t.same(v.problems, [], 'no console error and no failed request for the viewer');
    });
  });
}
