// An operator restricted to one sub-agent walks every page of the panel in a real browser against a
// real daemon with three agents (main, coder, writer): no page asks about an agent the user may not
// see (no 403, no console error, no failed request), every agent picker and list holds only `coder`,
// and a link to another agent's chat lands on coder's.
import type { Page } from 'playwright-core';
import t from 'tap';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand } from '../fixtures/panel-browser.js';

/** The agent names the page offers: every agent picker's options and every link to an agent's page. */
async function agentsShown(page: Page): Promise<string[]> {
  const options = await page.locator('select[name="agent"] option').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
  const links = await page.locator('main a[href^="/agents/"], main a[href^="/chat/"]').evaluateAll((els) => els.map((e) => decodeURIComponent((e.getAttribute('href') ?? '').split('/')[2]!.split('?')[0]!)));
  return [...new Set([...options, ...links])].sort();
}

if (SKIP_REASON) t.plan(0, SKIP_REASON);
else {
  await t.test('an operator allowed only coder sees only coder, on every page, with no failed request', async (t) => {
    const stand = await panelStand(t, {
      // The sub-agents' bots point at a closed port: no transport reaches out of the machine.
      config: { telegram_api_root: 'http://127.0.0.1:9' },
      registry: [
        { name: 'coder', telegram_token: '1:coder' },
        { name: 'writer', telegram_token: '2:writer' },
      ],
    });
    t.same(((await stand.api<{ name: string }[]>('GET', '/api/agents')).body).map((a) => a.name).sort(), ['coder', 'main', 'writer'], 'the daemon runs three agents');
    t.equal((await stand.api('POST', '/api/users', { username: 'cody', password: 'operator-pass-12', role: 'operator', allowed_agents: ['coder'] })).status, 201);
    const browser = await openBrowser(t);
    const { page, problems } = await openPage(browser, stand);
    await logIn(page, 'cody', 'operator-pass-12');

    const visit = async (path: string, open?: string) => {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      if (open) {
        const button = page.getByRole('button', { name: open });
        if ((await button.count()) > 0) {
          await button.first().click();
          await page.getByRole('dialog').locator('select[name="agent"] option[value="coder"]').waitFor({ state: 'attached' });
        }
      }
      await page.waitForLoadState('networkidle');
      const shown = await agentsShown(page);
      t.ok(shown.every((a) => a === 'coder'), `${path}${open ? ` (${open})` : ''}: only coder offered, got ${JSON.stringify(shown)}`);
      t.notMatch(await page.locator('main').innerText(), /\bwriter\b/, `${path}: writer is not named`);
      t.equal(await page.getByRole('button', { name: 'Try again' }).count(), 0, `${path}: no error to retry`);
    };

    for (const path of ['/', '/agents', '/agents/coder', '/tasks', '/workflows', '/cron', '/webhooks', '/notifications', '/settings', '/profile']) await visit(path);
    await visit('/tasks', 'New task');
    await visit('/cron', 'New cron job');
    await visit('/webhooks', 'New webhook');

    // The pages that pick an agent start on the one this user may see.
    for (const path of ['/memory', '/skills', '/user-files']) {
      await visit(path);
      t.equal(await page.locator('select[name="agent"]').inputValue(), 'coder', `${path} starts on coder`);
    }

    // Chat: the bare page, and links to agents outside allowed_agents, open coder's chat.
    for (const path of ['/chat', '/chat/main', '/chat/writer']) {
      await page.goto(path);
      await page.waitForURL(/\/chat\/coder$/);
      await page.waitForLoadState('networkidle');
      t.same(await agentsShown(page), ['coder'], `${path} opens coder's chat and offers only coder`);
    }
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.waitForURL(/\/chat\/coder\?session=/);
    await page.waitForLoadState('networkidle');

    t.same(problems, [], 'no console error, failed request or HTTP error on any page');
  });
}
