import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuPercent, homePaths, loadCronJobs, loadWebhooks, patchWebhookRecord, readCpuTimes, readDiskPercent, readHostSample, readRamPercent, saveWebhooks } from '../../store/index.js';
import type { WebhookRecord } from '../../schemas/index.js';

await t.test('cron_jobs.json and webhooks.json: wrappers read, duplicate ids and traversal ids refused', async (t) => {
  const paths = homePaths(t.testdir());
  mkdirSync(paths.root, { recursive: true });
  t.same(loadCronJobs(paths), []);
  writeFileSync(paths.cronJobsFile, JSON.stringify({ jobs: [{ id: 'a', title: 'A', schedule: '@daily', agent: 'main', last_run_at: 5 }] }));
  t.match(loadCronJobs(paths), [{ id: 'a', enabled: true, description: '', last_run_at: 5 }]);
  writeFileSync(paths.cronJobsFile, JSON.stringify([{ id: 'a', title: 'A', schedule: '@daily', agent: 'main' }, { id: 'a', title: 'B', schedule: '@daily', agent: 'main' }]));
  t.throws(() => loadCronJobs(paths), { code: 'corrupt-file', message: /ids must be unique/ });
  writeFileSync(paths.webhooksFile, JSON.stringify([{ id: '../x', agent: 'main' }]));
  t.throws(() => loadWebhooks(paths), { code: 'corrupt-file' });
  writeFileSync(paths.webhooksFile, JSON.stringify({ webhooks: [{ id: 'h', agent: 'main' }] }));
  t.match(loadWebhooks(paths), [{ id: 'h', secret: null, enabled: true }]);
});

await t.test('host metrics: percentages in range from /proc and statfs; cpu from the difference of two samples', async (t) => {
  t.equal(cpuPercent(null, { idle: 300, total: 400 }), 25, 'first sample: since boot');
  t.equal(cpuPercent({ idle: 300, total: 400 }, { idle: 350, total: 600 }), 75, 'busy share between samples');
  t.equal(cpuPercent({ idle: 300, total: 400 }, { idle: 300, total: 400 }), null, 'no time passed: no new figure');
  t.equal(cpuPercent({ idle: 300, total: 400 }, { idle: 10, total: 100 }), 90, 'a counter reset falls back to since boot');
  t.equal(cpuPercent(null, null), null);
  const sample = readHostSample(t.testdir());
  for (const n of [readRamPercent(), readDiskPercent(t.testdir()), sample.ram_percent, sample.disk_percent]) {
    t.ok(n === null || (n >= 0 && n <= 100), String(n));
  }
  const cpu = readCpuTimes();
  t.ok(cpu === null || (cpu.total >= cpu.idle && cpu.idle >= 0));
  t.equal(readDiskPercent(join(t.testdir(), 'no', 'such', 'dir')), null, 'a missing path is no figure, not an error');
});

await t.test('webhooks.json run fields: patches made together are one write, seen at once, merged over an admin save, never resurrect a deleted hook', async (t) => {
  const paths = homePaths(t.testdir());
  const hook = (id: string) => ({ id, agent: 'main', enabled: true, name: id }) as unknown as WebhookRecord;
  saveWebhooks(paths, [hook('a'), hook('b'), hook('gone')]);
  const onDisk = () => JSON.parse(readFileSync(paths.webhooksFile, 'utf8')) as Record<string, unknown>[];
  const written = [1, 2, 3].map((n) => patchWebhookRecord(paths, 'a', { trigger_count: n, last_request_id: `r${n}` }));
  const other = patchWebhookRecord(paths, 'gone', { trigger_count: 1 });
  t.match(loadWebhooks(paths).find((h) => h.id === 'a'), { trigger_count: 3, last_request_id: 'r3' }, 'readers see a patch before it is written');
  t.notOk(onDisk().find((h) => h.id === 'a')!.trigger_count, 'not on disk yet');
  // An admin edit meanwhile: load → change → save, as the records actor does (the patch is in what it loaded).
  saveWebhooks(paths, loadWebhooks(paths).filter((h) => h.id !== 'gone').map((h) => (h.id === 'b' ? ({ ...h, name: 'renamed' } as WebhookRecord) : h)));
  await Promise.all([...written, other]);
  t.match(onDisk(), [{ id: 'a', trigger_count: 3, last_request_id: 'r3' }, { id: 'b', name: 'renamed' }], 'the patches and the admin edit are both kept');
  t.equal(onDisk().length, 2, 'the deleted hook stays deleted');
  writeFileSync(paths.webhooksFile, '{broken');
  await t.rejects(patchWebhookRecord(paths, 'a', { trigger_count: 4 }), { code: 'corrupt-file' }, 'a write that cannot happen is the caller\'s error');
});

await t.test('webhooks.json run fields: counting across batches loses no call; a hand edit is read at once, and what a caller loads is its own', async (t) => {
  const paths = homePaths(t.testdir());
  saveWebhooks(paths, [{ id: 'a', agent: 'main', enabled: true, name: 'aaa' } as unknown as WebhookRecord]);
  const onDisk = () => JSON.parse(readFileSync(paths.webhooksFile, 'utf8')) as Record<string, unknown>[];
  const calls: Promise<void>[] = [];
  for (let i = 0; i < 60; i++) {
    // As the trigger handler counts: from what loadWebhooks says now, written or not.
    const count = (loadWebhooks(paths).find((h) => h.id === 'a')!.trigger_count as number | undefined) ?? 0;
    calls.push(patchWebhookRecord(paths, 'a', { trigger_count: count + 1 }));
    // Now and then let the event loop turn, so the calls span several batches.
    if (i % 5 === 4) await Promise.race([calls.at(-1), new Promise((r) => setImmediate(r))]);
  }
  await Promise.all(calls);
  t.equal(onDisk()[0]!.trigger_count, 60, 'every call counted once');

  // Same size, same inode, written in place: the parse kept from the last read must not answer.
  const text = readFileSync(paths.webhooksFile, 'utf8');
  writeFileSync(paths.webhooksFile, text.replace('"aaa"', '"bbb"'));
  t.equal(loadWebhooks(paths)[0]!.name, 'bbb');
  const loaded = loadWebhooks(paths);
  (loaded[0] as { name: string }).name = 'changed by a caller';
  t.equal(loadWebhooks(paths)[0]!.name, 'bbb', 'what a caller changes in what it loaded is its own copy');
});
