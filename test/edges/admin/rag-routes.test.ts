import t from 'tap';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { RAG_EVENTS } from '../../../schemas/index.js';
import { loadConfig } from '../../../store/index.js';
import { serveContent, snapshot } from '../../fixtures/admin-content.js';

await t.test('status: the rag settings, the index file and the memory facts', async (t) => {
  const s = await serveContent(t);
  const mem = join(s.paths.workspace, 'memory_system');
  fs.writeFileSync(join(mem, 'MAINMEMORY.md'), '# Main\n\n<!-- guidance\nnot a fact\n-->\n- fact one\n\n## Always Load\n- fact two\n');
  fs.mkdirSync(join(mem, 'modules', 'people'));
  fs.writeFileSync(join(mem, 'modules', 'people', 'alice.md'), 'Alice likes tea\r\nAlice lives in Oslo\r\n<!-- x -->\n');
  let r = await s.call('/api/rag/status');
  t.same(r.body, {
    enabled: false,
    embedding_model: '',
    reranker_enabled: false,
    reranker_model: '',
    index_workspace: true,
    index_memory: true,
    top_k_retrieval: 20,
    top_k_final: 5,
    vector_db_path: s.paths.ragIndex,
    vector_db_exists: false,
    vector_db_size_bytes: 0,
    chunk_count: 0,
    memory_fact_count: 4,
  });
  fs.mkdirSync(join(s.paths.root, 'rag'));
  fs.writeFileSync(s.paths.ragIndex, Buffer.alloc(4096));
  r = await s.call('/api/rag/status');
  t.match(r.body, { vector_db_exists: true, vector_db_size_bytes: 4096 });
  t.equal((await s.call('/api/rag/status', { as: 'viewer' })).status, 403);
  t.equal((await s.call('/api/rag/status', { as: 'operator' })).status, 200);
});

await t.test('config: any subset written to config.json atomically, restart_required, recorded', async (t) => {
  const s = await serveContent(t);
  fs.writeFileSync(s.paths.configFile, JSON.stringify({ api: { enabled: true, token: 'static-token-0123456789' }, my_note: 'kept', rag: { embedding_model: 'bge-small' } }, null, 2));
  let r = await s.call('/api/rag/config', { method: 'PUT', body: { enabled: true, top_k_retrieval: 40 } });
  t.equal(r.status, 200);
  t.match(r.body, { status: 'ok', restart_required: true, rag: { enabled: true, top_k_retrieval: 40, top_k_final: 5, embedding_model: 'bge-small' } });
  const raw = JSON.parse(fs.readFileSync(s.paths.configFile, 'utf8'));
  t.same(raw.rag, { embedding_model: 'bge-small', enabled: true, top_k_retrieval: 40 }, 'only what was sent is written, next to what was there');
  t.equal(raw.my_note, 'kept');
  t.equal(fs.statSync(s.paths.configFile).mode & 0o777, 0o600);
  t.equal(loadConfig(s.paths).config.rag.top_k_retrieval, 40, 'the file still loads');
  const ev = s.log.read().filter((e) => e.type === RAG_EVENTS.config_changed);
  t.same(ev.map((e) => e.data), [{ fields: { enabled: true, top_k_retrieval: 40 } }]);
  r = await s.call('/api/rag/config', { method: 'PUT', body: { top_k_final: 40, reranker_enabled: true, index_workspace: false, index_memory: false } });
  t.equal(r.status, 200, 'top_k_final may equal top_k_retrieval (checked against the file, not the running config)');
});

await t.test('config: unknown fields, wrong types, bad values, roles → 4xx and config.json unchanged', async (t) => {
  const s = await serveContent(t);
  const before = snapshot(s.dir);
  const seq = s.log.lastSeq();
  for (const body of [
    { enabled: true, embedding_model: 'x' },
    { unknown: 1 },
    { enabled: 'yes' },
    { top_k_retrieval: 0 },
    { top_k_retrieval: 2.5 },
    { top_k_final: '5' },
    { top_k_final: 21 },
    { top_k_retrieval: 1e9 },
    {},
    [],
    null,
  ]) {
    const r = await s.call('/api/rag/config', { method: 'PUT', body });
    t.equal(r.status, 400, JSON.stringify(body));
    t.match(r.body, { error: String, code: String });
  }
  t.match(await s.call('/api/rag/config', { method: 'PUT', raw: '{"enabled": tru' }), { status: 400, body: { code: 'invalid-json' } });
  t.equal((await s.call('/api/rag/config', { method: 'PUT', raw: JSON.stringify({ enabled: true, pad: 'x'.repeat(8192) }) })).status, 413);
  t.equal((await s.call('/api/rag/config', { method: 'PUT', as: 'operator', body: { enabled: true } })).status, 403);
  t.equal((await s.call('/api/rag/config', { method: 'PUT', as: 'viewer', body: { enabled: true } })).status, 403);
  t.same(snapshot(s.dir), before, 'config.json unchanged');
  fs.writeFileSync(s.paths.configFile, '{"rag": {"top_k_final": "bad"}}');
  const broken = snapshot(s.dir);
  t.match(await s.call('/api/rag/config', { method: 'PUT', body: { enabled: true } }), { status: 409, body: { code: 'config-invalid' } });
  t.same(snapshot(s.dir), broken, 'a broken config.json is never rewritten');
  t.equal(s.log.lastSeq(), seq);
  t.same(s.internal, []);
});

await t.test('config: the RAG settings are every agent\'s, so an admin restricted by allowed_agents may not change them', async (t) => {
  const s = await serveContent(t);
  const before = fs.readFileSync(s.paths.configFile, 'utf8');
  const r = await s.call('/api/rag/config', { method: 'PUT', as: 'coderAdmin', body: { enabled: true, top_k_final: 3 } });
  t.equal(r.status, 403);
  t.match(r.body, { code: 'agent-not-allowed' });
  t.equal(fs.readFileSync(s.paths.configFile, 'utf8'), before, 'config.json unchanged');
  t.same(s.log.read({ types: [RAG_EVENTS.config_changed] }), [], 'nothing recorded');
  t.equal((await s.call('/api/rag/config', { method: 'PUT', body: { enabled: true } })).status, 200, 'an unrestricted admin still can');
});
