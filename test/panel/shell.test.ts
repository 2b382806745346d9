// The panel's shell in a real browser against a real daemon: the login, the navigation, the
// language and theme switches, the phone-width drawer, logging out; and what the daemon serves
// with it (CSP, cached hashed assets, client routes).
import t from 'tap';
import { SKIP_REASON, logIn, openBrowser, openPage, panelStand, seriousViolations } from '../fixtures/panel-browser.js';

if (SKIP_REASON) t.plan(0, SKIP_REASON);
else {
  await t.test('log in, move around, switch language and theme, log out', async (t) => {
    const stand = await panelStand(t);
    const browser = await openBrowser(t);
    const { page, problems } = await openPage(browser, stand);

    await page.goto('/');
    await page.locator('input[name="username"]').waitFor();
    t.same(await seriousViolations(page), [], 'the login page passes the accessibility scan');

    await page.locator('input[name="username"]').fill('admin');
    await page.locator('input[name="password"]').fill('wrong-password');
    await page.locator('form button[type="submit"]').click();
    await page.getByRole('alert').waitFor();
    t.ok(problems.some((p) => p.startsWith('http 401')), 'a wrong password is refused by the server');
    problems.length = 0;

    await logIn(page, 'admin', stand.adminPassword);
    t.equal(await page.locator('h1').innerText(), 'Dashboard');
    t.same(await seriousViolations(page), [], 'the shell passes the accessibility scan');

    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await page.waitForURL('**/agents');
    t.equal(await page.getByRole('link', { name: 'Agents', exact: true }).getAttribute('aria-current'), 'page', 'the current page is marked');

    await page.reload();
    await page.locator('nav#nav').waitFor();
    t.match(page.url(), /\/agents$/, 'a client route survives a reload: the daemon serves index.html for it');

    await page.getByLabel('Language').selectOption('ru');
    await page.getByRole('link', { name: 'Агенты', exact: true }).waitFor();
    t.equal(await page.evaluate(() => document.documentElement.lang), 'ru');
    await page.getByLabel('Тема').selectOption('dark');
    t.equal(await page.evaluate(() => document.documentElement.dataset['theme']), 'dark');
    t.same(await seriousViolations(page), [], 'dark and Russian pass the accessibility scan too');

    await page.reload();
    await page.getByRole('link', { name: 'Агенты', exact: true }).waitFor();
    t.equal(await page.evaluate(() => document.documentElement.dataset['theme']), 'dark', 'the choices are remembered');

    await page.getByRole('button', { name: 'Выйти' }).click();
    await page.locator('input[name="username"]').waitFor();
    t.same(problems, [], 'no console error and no failed request');
    const me = await page.evaluate(async () => (await fetch('/api/auth/me')).status);
    t.equal(me, 401, 'logged out on the server too');
  });

  await t.test('phone width: the navigation is a drawer and nothing overflows', async (t) => {
    const stand = await panelStand(t);
    const browser = await openBrowser(t);
    const { page, problems } = await openPage(browser, stand, { viewport: { width: 375, height: 800 } });
    await logIn(page, 'admin', stand.adminPassword);
    t.notOk(await page.locator('nav#nav').isVisible(), 'the navigation is folded away');
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.waitForURL('**/tasks');
    t.notOk(await page.locator('nav#nav').isVisible(), 'choosing a page closes the drawer');
    t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), 'no sideways scrolling');
    t.same(problems, []);
  });

  await t.test('what the daemon serves with the panel', async (t) => {
    const stand = await panelStand(t);
    const index = await fetch(`${stand.url}/`);
    const csp = index.headers.get('content-security-policy') ?? '';
    t.match(csp, /script-src 'self'/);
    t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'no inline script or eval allowed');
    t.match(index.headers.get('cache-control'), /no-cache/, 'index.html is revalidated');
    const html = await index.text();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    t.ok(asset, 'index.html loads a hashed bundle');
    const js = await fetch(`${stand.url}${asset}`, { headers: { 'accept-encoding': 'gzip' } });
    t.equal(js.status, 200);
    t.match(js.headers.get('cache-control'), /immutable/, 'hashed assets are cached for good');
    t.match(js.headers.get('content-type'), /javascript/);
    const api = await fetch(`${stand.url}/api/no-such-thing`);
    t.equal(api.status, 404, 'an unknown API path is still a JSON 404, not the panel');
    t.match(api.headers.get('content-type'), /json/);
  });
}
