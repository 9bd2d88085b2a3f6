// The Grafana query API through a client of Pyroscope's schema: the same
// @connectrpc/connect-node client as connect.mjs, but generated (pgen/) from
// the project's .proto put back to Pyroscope's declarations where they
// differ (grafana.sh writes that copy): package google.v1 for the profile,
// string_table `repeated string`, no Profile.doc_url or Line.column, and
// proto3 `optional` where Pyroscope has it. Every served method, both
// encodings: the answers decode with Pyroscope's field types, the pprof
// string table holds names (not base64), go tool pprof reads the sample types
// of a SelectMergeProfile and of a SelectMergeStacktraces PPROF answer, the
// TREE format decodes (pytree.mjs) to go tool pprof's sums and is byte for
// byte what Pyroscope's encoder writes of the same tree, and GetProfileStats
// gives the pushed profiles' oldest and newest times.
//
// usage: node pyroscope.mjs URL TOKEN_FILE MOUNT TMPDIR
// Prints "ok"/"not ok" lines; exits 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { toBinary, fromBinary, fromJson } from '@bufbuild/protobuf';
import { QuerierService } from './pgen/querier/v1/querier_pb.js';
import { ProfileSchema } from './pgen/profile_pb.js';
import { pprofSum, pprofSums, pprofTop } from './pprof.mjs';
import { nodes } from './flamebearer.mjs';
import { treeOfFlame, marshalTree, unmarshalTree, treeNodes } from './pytree.mjs';

const [url, tokenFile, mnt, tmp] = process.argv.slice(2);
if (!tmp) {
  console.error('usage: node pyroscope.mjs URL TOKEN_FILE MOUNT TMPDIR');
  process.exit(2);
}
const token = fs.readFileSync(tokenFile, 'utf8').trim();
let failed = 0;
function check(name, cond, detail) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${name}${cond || detail === undefined ? '' : ': ' + detail}`);
  if (!cond) failed++;
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const show = (x) => JSON.stringify(x, (k, v) => (typeof v === 'bigint' ? String(v) : v));

const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const HEAP = 'memory:inuse_space:bytes:space:bytes';
const ALL = [0n, 4102444800000n];
const tree = (svc, type) => path.join(mnt, svc, type, 'all', 'all', 'merged.pb.gz');
const CASES = [
  { svc: 'goapp', type: 'cpu', id: CPU, st: 'cpu', unit: 'nanoseconds' },
  { svc: 'realgo', type: 'cpu', id: CPU, st: 'cpu', unit: 'nanoseconds' },
  { svc: 'heapapp', type: 'heap', id: HEAP, st: 'inuse_space', unit: 'bytes' },
];
const isStrings = (a) => Array.isArray(a) && a.every((s) => typeof s === 'string');
const isBig = (...v) => v.every((x) => typeof x === 'bigint');

// The names -top lists for a file, and the sum per name.
function flatByName(file, st, unit) {
  const m = new Map();
  for (const r of pprofTop(file, st, unit)) if (r.flat !== 0n) m.set(r.name, r.flat);
  return m;
}
function selfOfTree(roots) {
  const m = new Map();
  for (const n of treeNodes(roots)) if (n.self !== 0n) m.set(n.name, (m.get(n.name) || 0n) + n.self);
  return m;
}
const sameMap = (a, b) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

// pprof's view of a profile message: its sample types as "type/unit".
function pprofTypes(file) { return Object.keys(pprofSums(file)); }

async function suite(binary) {
  const enc = binary ? 'proto' : 'json';
  const transport = createConnectTransport({
    baseUrl: url, httpVersion: '1.1', useBinaryFormat: binary,
    interceptors: [(next) => (req) => { req.header.set('Authorization', `Bearer ${token}`); return next(req); }],
  });
  const c = createClient(QuerierService, transport);

  // --- the listing methods: decode with Pyroscope's types ------------------
  const pt = await c.profileTypes({ start: ALL[0], end: ALL[1] });
  check(`${enc}: ProfileTypes decodes (${pt.profileTypes.length} types), ID and parts strings`,
    pt.profileTypes.length > 0 && pt.profileTypes.every((p) => typeof p.ID === 'string' && typeof p.sampleType === 'string'),
    show(pt.profileTypes[0]));
  const ln = await c.labelNames({ matchers: ['{service_name="goapp"}'], start: ALL[0], end: ALL[1] });
  check(`${enc}: LabelNames decodes: names strings`, isStrings(ln.names) && ln.names.includes('pod'), ln.names.join(' '));
  const lv = await c.labelValues({ name: 'service_name', start: ALL[0], end: ALL[1] });
  check(`${enc}: LabelValues decodes: names strings`, isStrings(lv.names) && lv.names.includes('realgo'), lv.names.join(' '));
  const se = await c.series({ matchers: ['{service_name="goapp"}'], labelNames: ['pod'], start: ALL[0], end: ALL[1] });
  check(`${enc}: Series decodes: labelsSet of LabelPairs`, se.labelsSet.length === 4 &&
    se.labelsSet.every((l) => l.labels.every((p) => typeof p.name === 'string' && typeof p.value === 'string')), show(se.labelsSet));
  const now = BigInt(Date.now());
  const ss = await c.selectSeries({ profileTypeID: CPU, labelSelector: '{service_name="goapp"}',
    start: now - 3600000n, end: now + 600000n, step: 60, groupBy: ['pod'], limit: 3n });
  check(`${enc}: SelectSeries decodes (optional limit 3): points of double value, int64 timestamp`,
    ss.series.length === 3 && ss.series.every((s) => s.points.every((p) => typeof p.value === 'number' && isBig(p.timestamp))),
    show(ss.series.map((s) => s.points.length)));
  const side = (pod) => ({ profileTypeID: CPU, labelSelector: `{service_name="goapp", pod="${pod}"}`, start: ALL[0], end: ALL[1] });
  const d = await c.diff({ left: side('a-1'), right: side('b-1') });
  check(`${enc}: Diff decodes: names strings, int64 ticks`, d.flamegraph && isStrings(d.flamegraph.names) &&
    isBig(d.flamegraph.leftTicks, d.flamegraph.rightTicks, d.flamegraph.total), show(d.flamegraph && d.flamegraph.leftTicks));

  for (const k of CASES) {
    const what = `${enc}: ${k.svc} ${k.id}`;
    const sel = `{service_name="${k.svc}"}`;
    const file = tree(k.svc, k.type);
    const sum = pprofSum(file, k.st);
    const flat = flatByName(file, k.st, k.unit);

    // --- SelectMergeProfile: the string table is names ---------------------
    const prof = await c.selectMergeProfile({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1] });
    const st = prof.stringTable;
    const typeName = (vt) => `${st[Number(vt.type)]}/${st[Number(vt.unit)]}`;
    check(`${what}: SelectMergeProfile stringTable: ${st.length} strings, "" first`, isStrings(st) && st[0] === '', show(st.slice(0, 4)));
    check(`${what}: SelectMergeProfile sampleType names ${k.st}/${k.unit} from the table`,
      eq(prof.sampleType.map(typeName), [`${k.st}/${k.unit}`]), show(prof.sampleType.map(typeName)));
    const fnames = new Set(prof.function.map((f) => st[Number(f.name)]));
    const missing = [...flat.keys()].filter((n) => !fnames.has(n));
    check(`${what}: SelectMergeProfile function names are pprof -top's (${flat.size} with flat)`, missing.length === 0, missing.slice(0, 3).join('; '));
    const pf = path.join(tmp, `pyro-smp-${enc}-${k.svc}.pb`);
    fs.writeFileSync(pf, toBinary(ProfileSchema, prof));
    let types, psum;
    try { types = pprofTypes(pf); psum = pprofSum(pf, k.st); } catch (e) { types = [String(e.message).split('\n')[0]]; }
    check(`${what}: go tool pprof reads SelectMergeProfile: sample types ${types}, sum ${psum}`,
      eq(types, [`${k.st}/${k.unit}`]) && psum === sum, `${types} ${psum} vs ${sum}`);

    // --- SelectMergeStacktraces PPROF: the same profile, wrapped -----------
    const pp = await c.selectMergeStacktraces({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1], format: 4 });
    const ppf = path.join(tmp, `pyro-pprof-${enc}-${k.svc}.pb`);
    let ptypes = ['no pprof field'], ppsum;
    if (pp.pprof && pp.pprof.profile) {
      fs.writeFileSync(ppf, toBinary(ProfileSchema, pp.pprof.profile));
      try { ptypes = pprofTypes(ppf); ppsum = pprofSum(ppf, k.st); } catch (e) { ptypes = [String(e.message).split('\n')[0]]; }
    }
    check(`${what}: SelectMergeStacktraces PPROF: pprof.profile read by go tool pprof (${ptypes}, ${ppsum})`,
      eq(ptypes, [`${k.st}/${k.unit}`]) && ppsum === sum && !pp.flamegraph && pp.tree.length === 0, `${ptypes} ${ppsum} vs ${sum}`);
    const ppTop = pp.pprof && pp.pprof.profile ? flatByName(ppf, k.st, k.unit) : new Map();
    check(`${what}: SelectMergeStacktraces PPROF: -top equals merged.pb.gz's`, sameMap(ppTop, flat), `${ppTop.size} vs ${flat.size}`);

    // --- SelectMergeStacktraces TREE ----------------------------------------
    const tr = await c.selectMergeStacktraces({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1], format: 2, maxNodes: 65536n });
    let roots = [], err = '';
    try { roots = unmarshalTree(tr.tree); } catch (e) { err = e.message; }
    const total = roots.reduce((s, n) => s + n.total, 0n);
    check(`${what}: TREE (${tr.tree.length} bytes) decodes as Pyroscope's tree, total = pprof sum (${sum})`,
      tr.tree instanceof Uint8Array && err === '' && total === sum && !tr.flamegraph, `${err} ${total}`);
    const self = selfOfTree(roots);
    check(`${what}: TREE self per function = pprof -top flat (${flat.size} functions)`, sameMap(self, flat),
      [...flat].filter(([n, v]) => self.get(n) !== v).slice(0, 3).map(([n, v]) => `${n}: pprof ${v}, tree ${self.get(n)}`).join('; '));
    const fg = await c.selectMergeStacktraces({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1], maxNodes: 65536n });
    const ft = treeOfFlame(nodes(fg.flamegraph, 4));
    const want = marshalTree(ft, 65536);
    check(`${what}: TREE bytes = Pyroscope's MarshalTruncate of the flame graph's tree`, Buffer.compare(want, Buffer.from(tr.tree)) === 0,
      `${want.length} vs ${tr.tree.length} bytes`);
    if (k.svc === 'realgo') {
      const t8 = await c.selectMergeStacktraces({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1], format: 2, maxNodes: 8n });
      const w8 = marshalTree(ft, 8);
      const r8 = unmarshalTree(t8.tree);
      const n8 = treeNodes(r8);
      check(`${what}: TREE max_nodes 8: bytes = Pyroscope's truncation (${t8.tree.length} bytes, ${n8.length} nodes with "other")`,
        Buffer.compare(w8, Buffer.from(t8.tree)) === 0 && n8.some((n) => n.name === 'other'), `${w8.length} vs ${t8.tree.length}`);
      check(`${what}: TREE max_nodes 8: the total is kept`, r8.reduce((s, n) => s + n.total, 0n) === sum);
    }
  }
  // pprof's newer fields, which Pyroscope's schema lacks: Connect's clients
  // skip unknown fields in both encodings (and protobuf readers always do).
  let nf = 'no answer';
  try {
    const p = await c.selectMergeProfile({ profileTypeID: CPU, labelSelector: '{service_name="newfields"}', start: ALL[0], end: ALL[1] });
    nf = p.sample.map((s) => String(s.value[0])).sort().join(',');
  } catch (e) { nf = ConnectError.from(e).rawMessage; }
  check(`${enc}: a profile with Line.column and doc_url reads with Pyroscope's schema (samples ${nf})`, nf === '300,700', nf);
  const none = await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: '{service_name="nobody"}', start: ALL[0], end: ALL[1], format: 2 });
  check(`${enc}: TREE of a selection matching nothing: empty bytes`, none.tree.length === 0, none.tree.length);
  const nonep = await c.selectMergeProfile({ profileTypeID: CPU, labelSelector: '{service_name="nobody"}', start: ALL[0], end: ALL[1] });
  check(`${enc}: SelectMergeProfile matching nothing: an empty profile`, nonep.sample.length === 0);

  // --- GetProfileStats -------------------------------------------------------
  const gs = await c.getProfileStats({});
  const times = JSON.parse(fs.readFileSync(path.join(tmp, 'pushed-times.json'), 'utf8')).map(BigInt);
  const lo = times.reduce((a, b) => (b < a ? b : a)), hi = times.reduce((a, b) => (b > a ? b : a));
  check(`${enc}: GetProfileStats: dataIngested, oldest ${gs.oldestProfileTime} = the oldest pushed profile's ms, newest ${gs.newestProfileTime} = the newest's`,
    gs.dataIngested === true && isBig(gs.oldestProfileTime, gs.newestProfileTime) &&
    gs.oldestProfileTime === lo && gs.newestProfileTime === hi, `${show(gs)} vs ${lo} ${hi}`);

  // --- still refused: DOT ------------------------------------------------------
  try {
    await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: '{service_name="goapp"}', start: ALL[0], end: ALL[1], format: 3 });
    check(`${enc}: format DOT: unimplemented`, false, 'it answered');
  } catch (e) {
    const ce = ConnectError.from(e);
    check(`${enc}: format DOT: unimplemented with a reason`, ce.code === Code.Unimplemented, `${Code[ce.code]}: ${ce.rawMessage}`);
  }
}

(async () => {
  // The pushed profiles' times (time_nanos, in ms), for GetProfileStats.
  const files = JSON.parse(fs.readFileSync(path.join(tmp, 'pushed.json'), 'utf8'));
  const times = files.map((f) => {
    let b = fs.readFileSync(f);
    if (b[0] === 0x1f && b[1] === 0x8b) b = zlib.gunzipSync(b);
    return String(fromBinary(ProfileSchema, b).timeNanos / 1000000n);
  });
  fs.writeFileSync(path.join(tmp, 'pushed-times.json'), JSON.stringify(times));
  try {
    await suite(true);
    await suite(false);
  } catch (e) {
    check('the Pyroscope-schema client ran every call', false, e.stack || String(e));
  }
  // The JSON form on the wire: string_table as JSON strings, not base64.
  const r = await fetch(`${url}/querier.v1.QuerierService/SelectMergeProfile`, { method: 'POST',
    body: JSON.stringify({ profileTypeID: CPU, labelSelector: '{service_name="realgo"}', start: '0', end: String(ALL[1]) }),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` } });
  const j = await r.json();
  check('JSON on the wire: stringTable holds "cpu" and "nanoseconds" as plain strings',
    r.status === 200 && j.stringTable.includes('cpu') && j.stringTable.includes('nanoseconds') && !j.stringTable.includes('Y3B1'),
    `${r.status} ${show(j.stringTable && j.stringTable.slice(0, 5))}`);
  // A strict proto3 JSON parser of Pyroscope's schema (protobuf-es fromJson,
  // which refuses unknown keys unless told otherwise, as Go's protojson does)
  // reads the JSON form of a profile with pprof's newer fields.
  const r2 = await fetch(`${url}/querier.v1.QuerierService/SelectMergeProfile`, { method: 'POST',
    body: JSON.stringify({ profileTypeID: CPU, labelSelector: '{service_name="newfields"}', start: '0', end: String(ALL[1]) }),
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` } });
  let strict;
  try {
    const p = fromJson(ProfileSchema, await r2.json());
    strict = `${p.sample.length} samples, doc url index ${p.docUrl}`;
  } catch (e) { strict = e.message; }
  check(`JSON on the wire: a strict parser of Pyroscope's schema reads a profile with doc_url and Line.column (${strict})`,
    r2.status === 200 && strict === '2 samples, doc url index undefined', strict);
  process.exit(failed ? 1 : 0);
})();
