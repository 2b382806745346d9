import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { BenchReport } from './report.js';
import { startServer } from './server-handle.js';
import { median, within } from './timing.js';

/*
 * The panel as its user pays for it: a cold first load in Debian's chromium on loopback (bytes
 * transferred, compressed JavaScript, time until the login form takes input), the signed-in
 * dashboard (time to its frame and to its figures, a signed-in user's cold load with an empty cache,
 * and how many API calls one view makes), against a baseline in
 * the same run: the same browser fetching one small static file from the same daemon.
 */
const RUNS = 5;
const CHROMIUM = [process.env.SVC_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));
const ARGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'];

interface Load {
  bytes: number;
  jsBytes: number;
  requests: number;
}

/** Every response of the context's pages, by the bytes that crossed the wire (headers included). */
async function meter(context: BrowserContext, page: Page): Promise<{ load: Load; api: string[] }> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  const types = new Map<string, string>();
  const load: Load = { bytes: 0, jsBytes: 0, requests: 0 };
  const api: string[] = [];
  cdp.on('Network.requestWillBeSent', (e: { request: { url: string } }) => {
    const path = new URL(e.request.url).pathname;
    if (path.startsWith('/api/')) api.push(path);
  });
  cdp.on('Network.responseReceived', (e: { requestId: string; response: { mimeType: string } }) => types.set(e.requestId, e.response.mimeType));
  cdp.on('Network.loadingFinished', (e: { requestId: string; encodedDataLength: number }) => {
    load.requests++;
    load.bytes += e.encodedDataLength;
    if ((types.get(e.requestId) ?? '').includes('javascript')) load.jsBytes += e.encodedDataLength;
  });
  return { load, api };
}

export async function benchPanel(report: BenchReport): Promise<void> {
  report.section('admin panel: first load and the dashboard (chromium, loopback)');
  if (!CHROMIUM) {
    report.note('skipped', 'chromium not found (apt install chromium)');
    return;
  }
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-panel-'));
  const server = await startServer('daemon', home);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  try {
    const url = `http://127.0.0.1:${server.port}`;
    const password = readFileSync(join(home, '_secrets', '.initial_admin_password'), 'utf8').trim();
    const first: Load[] = [];
    const interactive: number[] = [];
    const baseline: number[] = [];
    const dashboard: number[] = [];
    const dashboardReady: number[] = [];
    const signedInCold: number[] = [];
    const apiCalls: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      // Baseline: the same browser, a fresh context, one small static file of the same daemon.
      const bare = await browser.newContext();
      const barePage = await bare.newPage();
      await barePage.goto(`${url}/favicon.svg`);
      baseline.push(await barePage.evaluate(() => (performance as unknown as { getEntriesByType(t: string): { duration: number }[] }).getEntriesByType('navigation')[0]!.duration));
      await bare.close();

      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await context.newPage();
      const { load } = await meter(context, page);
      await page.goto(url);
      const input = page.locator('input[name="username"]');
      await within(input.waitFor(), 'login form');
      // Since navigation start, the moment the form takes input.
      interactive.push(await page.evaluate(() => performance.now()));
      await page.waitForLoadState('networkidle');
      first.push({ ...load });

      await input.fill('admin');
      await page.locator('input[name="password"]').fill(password);
      const t0 = await page.evaluate(() => performance.now());
      await page.locator('form button[type="submit"]').click();
      await within(page.locator('#page-title').waitFor(), 'dashboard');
      dashboard.push((await page.evaluate(() => performance.now())) - t0);
      // Interactive: the summary's figures are in, not only the page's frame.
      await within(page.getByText('Agents online').waitFor(), 'dashboard figures');
      dashboardReady.push((await page.evaluate(() => performance.now())) - t0);
      await page.waitForLoadState('networkidle');

      // A signed-in user's cold load: the session's cookies and storage, an empty cache, from
      // navigation start to the dashboard's figures.
      const cold = await browser.newContext({ locale: 'en-GB', storageState: await context.storageState() });
      const coldPage = await cold.newPage();
      await coldPage.goto(url);
      await within(coldPage.getByText('Agents online').waitFor(), 'dashboard figures on a signed-in cold load');
      signedInCold.push(await coldPage.evaluate(() => performance.now()));
      await cold.close();

      // One view of the dashboard by a signed-in user: what a reload asks the API.
      const second = await context.newPage();
      const { api } = await meter(context, second);
      await second.goto(url);
      await within(second.locator('#page-title').waitFor(), 'dashboard after reload');
      await second.waitForLoadState('networkidle');
      apiCalls.push(api.length);
      await context.close();
    }
    const jsKb = median(first.map((l) => l.jsBytes)) / 1024;
    const tti = median(interactive);
    const base = median(baseline);
    report.figure('first load: JavaScript transferred (compressed)', jsKb, 'KB', { target: { op: '<=', value: 250 } });
    report.figure('first load: everything transferred', median(first.map((l) => l.bytes)) / 1024, 'KB');
    report.note('first load: requests', String(median(first.map((l) => l.requests))));
    report.figure('first load: interactive (login form takes input)', tti, 'ms', { ratio: tti / base, against: 'one static file', target: { op: '<=', value: 1000 } });
    report.figure('baseline: one static file from the same daemon', base, 'ms');
    report.figure('sign-in to the dashboard shown', median(dashboard), 'ms');
    report.figure('sign-in to the dashboard interactive (its figures shown)', median(dashboardReady), 'ms');
    report.figure('signed-in cold load: navigation to the dashboard interactive (empty cache)', median(signedInCold), 'ms', { ratio: median(signedInCold) / base, against: 'one static file' });
    report.note('dashboard: API calls per page view', `${median(apiCalls)} (median of ${RUNS})`);
  } finally {
    await browser.close();
    await server.stop();
    rmSync(home, { recursive: true, force: true });
  }
}
