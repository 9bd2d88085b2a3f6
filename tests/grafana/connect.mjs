// The Grafana query API (querier.v1 over Connect) through a real client:
// @connectrpc/connect-node with code that protoc-gen-es generated from the
// project's .proto (gen/, made by `buf generate` before the run). Every method
// is called in both of Connect's unary encodings (binary and JSON, HTTP/1.1),
// and the answers are checked against go tool pprof on the same profiles
// (the tree's merged.pb.gz of the same range, the pushed files), and against
// the tree's listings; then the same label matchers through the tree, the
// profefe API and this API; then a method profilefs does not serve (501).
//
// usage: node connect.mjs URL TOKEN_FILE MOUNT TMPDIR
// The data set is the one tests/integration/grafana.sh pushes (see there).
// Prints "ok"/"not ok" lines; exits 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { toBinary } from '@bufbuild/protobuf';
import { QuerierService } from './gen/querier/v1/querier_pb.js';
import { ProfileSchema } from './gen/profile_pb.js';
import { pprofSum, pprofSums, pprofTop } from './pprof.mjs';
import { nodes, selfByName, consistent } from './flamebearer.mjs';

const [url, tokenFile, mnt, tmp] = process.argv.slice(2);
if (!tmp) {
  console.error('usage: node connect.mjs URL TOKEN_FILE MOUNT TMPDIR');
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
const ALL = [0n, 4102444800000n];          // 1970 .. 2100, in ms: the tree's `all`
// The label sets goapp's four profiles were pushed with (grafana.sh).
const PODS = { 'a-1': 'us', 'a-2': 'eu', 'b-1': 'us', 'a-3': 'ap' };
const tree = (svc, type, sel = 'all') => path.join(mnt, svc, type, sel, 'all', 'merged.pb.gz');
const podDir = (p) => `pod=${p},region=${PODS[p]}`;
// The selections checked: service, store type, profile type id, sample type.
const CASES = [
  { svc: 'goapp', type: 'cpu', id: CPU, st: 'cpu', unit: 'nanoseconds' },
  { svc: 'goapp', type: 'cpu', id: 'process_cpu:samples:count:cpu:nanoseconds', st: 'samples', unit: 'count' },
  { svc: 'realgo', type: 'cpu', id: CPU, st: 'cpu', unit: 'nanoseconds' },
  { svc: 'heapapp', type: 'heap', id: HEAP, st: 'inuse_space', unit: 'bytes' },
  { svc: 'heapapp', type: 'heap', id: 'memory:alloc_objects:count:space:bytes', st: 'alloc_objects', unit: 'count' },
];

function lsDirs(dir) {
  return fs.readdirSync(dir).filter((d) => d !== 'all' && fs.statSync(path.join(dir, d)).isDirectory()).sort();
}

// The flat values of -top against the flame graph's self per name: every
// function pprof lists with a non-zero flat has that self in the graph.
function topMatches(flame, file, st, unit) {
  const top = pprofTop(file, st, unit).filter((r) => r.flat !== 0n);
  const self = selfByName(flame);
  const bad = top.filter((r) => self.get(r.name) !== r.flat);
  return { ok: top.length > 0 && bad.length === 0, n: top.length,
    detail: bad.slice(0, 3).map((r) => `${r.name}: pprof ${r.flat}, graph ${self.get(r.name)}`).join('; ') };
}

async function suite(binary) {
  const enc = binary ? 'proto' : 'json';
  const transport = createConnectTransport({
    baseUrl: url, httpVersion: '1.1', useBinaryFormat: binary,
    interceptors: [(next) => (req) => { req.header.set('Authorization', `Bearer ${token}`); return next(req); }],
  });
  const c = createClient(QuerierService, transport);

  // --- ProfileTypes: Grafana's health check ---------------------------------
  const pt = await c.profileTypes({ start: ALL[0], end: ALL[1] });
  const ids = pt.profileTypes.map((p) => p.ID);
  const want = [...new Set(CASES.map((k) => k.id))];
  check(`${enc}: ProfileTypes lists the pushed types (${ids.length})`, want.every((i) => ids.includes(i)), ids.join(' '));
  const cpu = pt.profileTypes.find((p) => p.ID === CPU);
  check(`${enc}: ProfileTypes: the five parts of ${CPU}`, cpu && cpu.name === 'process_cpu' &&
    cpu.sampleType === 'cpu' && cpu.sampleUnit === 'nanoseconds' && cpu.periodType === 'cpu' &&
    cpu.periodUnit === 'nanoseconds', show(cpu));

  // --- LabelNames, LabelValues, Series against the tree's listings ---------
  const ln = await c.labelNames({ matchers: ['{service_name="goapp"}'], start: ALL[0], end: ALL[1] });
  check(`${enc}: LabelNames of goapp`, ['pod', 'region', 'service_name'].every((n) => ln.names.includes(n)), ln.names.join(' '));
  const lvs = await c.labelValues({ name: 'service_name', start: ALL[0], end: ALL[1] });
  const services = fs.readdirSync(mnt).filter((d) => d !== 'ingest' && fs.statSync(path.join(mnt, d)).isDirectory()).sort();
  check(`${enc}: LabelValues service_name equals the mount's services`,
    eq([...lvs.names].sort(), services) && eq(services, ['goapp', 'heapapp', 'realgo']), `${lvs.names} vs ${services}`);
  const lvp = await c.labelValues({ name: 'pod', matchers: ['{service_name="goapp"}'], start: ALL[0], end: ALL[1] });
  check(`${enc}: LabelValues pod of goapp`, eq([...lvp.names].sort(), Object.keys(PODS).sort()), lvp.names.join(' '));
  const se = await c.series({ matchers: [`{service_name="goapp", __profile_type__="${CPU}"}`],
    labelNames: ['pod', 'region'], start: ALL[0], end: ALL[1] });
  const sets = se.labelsSet.map((l) => l.labels.map((p) => `${p.name}=${p.value}`).sort().join(',')).sort();
  check(`${enc}: Series of goapp equals the label sets the tree lists`, eq(sets, lsDirs(path.join(mnt, 'goapp', 'cpu'))), sets.join(' '));

  // --- SelectMergeStacktraces / SelectMergeProfile against go tool pprof ---
  for (const k of CASES) {
    const what = `${enc}: ${k.svc} ${k.id}`;
    const sel = `{service_name="${k.svc}"}`;
    const file = tree(k.svc, k.type);
    const sum = pprofSum(file, k.st);
    const sm = await c.selectMergeStacktraces({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1], maxNodes: 65536n });
    const fg = sm.flamegraph;
    check(`${what}: SelectMergeStacktraces total = pprof -raw sum of merged.pb.gz (${sum})`, fg && fg.total === sum, fg && fg.total);
    const ns = nodes(fg, 4);
    check(`${what}: the flame graph's root is the total`, ns.length > 1 && ns[0].depth === 0 && ns[0].total === sum, show(ns[0]));
    const bad = consistent(ns);
    check(`${what}: every node within its parent, self = total - children`, bad === null, bad);
    check(`${what}: maxSelf is the largest self`, fg.maxSelf === ns.reduce((m, n) => (n.self > m ? n.self : m), 0n), fg.maxSelf);
    const tm = topMatches(ns, file, k.st, k.unit);
    check(`${what}: self per function = pprof -top flat (${tm.n} functions)`, tm.ok, tm.detail);

    const prof = await c.selectMergeProfile({ profileTypeID: k.id, labelSelector: sel, start: ALL[0], end: ALL[1] });
    const pf = path.join(tmp, `smp-${enc}-${k.svc}-${k.st}.pb`);
    fs.writeFileSync(pf, toBinary(ProfileSchema, prof));
    let psum;
    try { psum = pprofSum(pf, k.st); } catch (e) { psum = String(e.message).split('\n')[0]; }
    check(`${what}: SelectMergeProfile read by go tool pprof sums to merged.pb.gz's`, psum === sum, `${psum} vs ${sum}`);
    let topOk = false, detail;
    try {
      const a = pprofTop(pf, k.st, k.unit).filter((r) => r.flat !== 0n).map((r) => `${r.name}=${r.flat}`).sort();
      const b = pprofTop(file, k.st, k.unit).filter((r) => r.flat !== 0n).map((r) => `${r.name}=${r.flat}`).sort();
      topOk = a.length > 0 && eq(a, b);
      detail = `${a.slice(0, 3)} vs ${b.slice(0, 3)}`;
    } catch (e) { detail = e.message.split('\n')[0]; }
    check(`${what}: SelectMergeProfile's -top equals merged.pb.gz's`, topOk, detail);
  }
  // The tree's merge is the files' merge (so the sums above are the files').
  const files = fs.readdirSync(path.join(tmp, 'go')).filter((f) => f.startsWith('cpu-')).map((f) => path.join(tmp, 'go', f));
  const filesSum = files.reduce((s, f) => s + pprofSum(f, 'cpu'), 0n);
  check(`${enc}: goapp's pushed files sum to merged.pb.gz's (${filesSum})`, filesSum === pprofSum(tree('goapp', 'cpu'), 'cpu'));

  // max_nodes: the graph keeps the largest nodes, the rest summed as "other".
  const small = await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: '{service_name="realgo"}', start: ALL[0], end: ALL[1], maxNodes: 8n });
  const sn = nodes(small.flamegraph, 4);
  const real = sn.filter((n) => n.name !== 'other' && n.depth > 0);
  const full = nodes((await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: '{service_name="realgo"}', start: ALL[0], end: ALL[1] })).flamegraph, 4);
  const fullTotals = full.filter((n) => n.depth > 0).map((n) => n.total).sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  check(`${enc}: max_nodes 8: 8 nodes below the root, the largest (of ${full.length - 1}), plus "other"`,
    real.length === 8 && sn.some((n) => n.name === 'other') && real.every((n) => n.total >= fullTotals[7]),
    `${real.length} kept: ${real.map((n) => `${n.name}=${n.total}`).join(' ')}`);
  check(`${enc}: max_nodes 8: the total is kept`, small.flamegraph.total === pprofSum(tree('realgo', 'cpu'), 'cpu') && consistent(sn) === null);

  // --- SelectSeries: the timeline, grouped by pod ---------------------------
  const now = BigInt(Date.now());
  const ss = await c.selectSeries({ profileTypeID: CPU, labelSelector: '{service_name="goapp"}',
    start: now - 3600000n, end: now + 600000n, step: 60, groupBy: ['pod'] });
  const got = {}, pts = {};
  for (const s of ss.series) {
    const pod = (s.labels.find((l) => l.name === 'pod') || {}).value;
    got[pod] = s.points.reduce((a, p) => a + p.value, 0);
    pts[pod] = s.points.length;
  }
  const wantPods = {};
  for (const p of Object.keys(PODS)) wantPods[p] = Number(pprofSum(tree('goapp', 'cpu', podDir(p)), 'cpu'));
  check(`${enc}: SelectSeries by pod: each series sums to its pod's merged.pb.gz`, eq(Object.keys(got).sort(), Object.keys(wantPods).sort()) &&
    Object.keys(wantPods).every((p) => got[p] === wantPods[p]), `${show(got)} vs ${show(wantPods)}`);
  check(`${enc}: SelectSeries: at most one point per 60 s step`, ss.series.every((s) => s.points.length <= 71 &&
    s.points.every((p, i) => i === 0 || p.timestamp - s.points[i - 1].timestamp >= 60000n)), show(pts));
  const lim = await c.selectSeries({ profileTypeID: CPU, labelSelector: '{service_name="goapp"}',
    start: now - 3600000n, end: now + 600000n, step: 60, groupBy: ['pod'], limit: 2n });
  check(`${enc}: SelectSeries limit 2`, lim.series.length === 2, lim.series.length);

  // --- Diff: two pods -------------------------------------------------------
  const side = (pod) => ({ profileTypeID: CPU, labelSelector: `{service_name="goapp", pod="${pod}"}`, start: ALL[0], end: ALL[1] });
  const d = await c.diff({ left: side('a-1'), right: side('b-1') });
  const ls = pprofSum(tree('goapp', 'cpu', podDir('a-1')), 'cpu'), rs = pprofSum(tree('goapp', 'cpu', podDir('b-1')), 'cpu');
  const dfg = d.flamegraph;
  check(`${enc}: Diff leftTicks/rightTicks = pprof sums of the two pods (${ls}, ${rs})`, dfg && dfg.leftTicks === ls && dfg.rightTicks === rs,
    dfg && `${dfg.leftTicks}, ${dfg.rightTicks}`);
  const dn = nodes(dfg, 7);
  check(`${enc}: Diff root: both totals`, dn.length > 1 && dn[0].totalb === ls && dn[0].total === rs, show(dn[0]));
  const lt = pprofTop(tree('goapp', 'cpu', podDir('a-1')), 'cpu', 'nanoseconds').filter((r) => r.flat !== 0n);
  const rt = pprofTop(tree('goapp', 'cpu', podDir('b-1')), 'cpu', 'nanoseconds').filter((r) => r.flat !== 0n);
  const lself = selfByName(dn, 'selfb'), rself = selfByName(dn, 'self');
  check(`${enc}: Diff self per function of each side = pprof -top flat`,
    lt.every((r) => lself.get(r.name) === r.flat) && rt.every((r) => rself.get(r.name) === r.flat),
    lt.filter((r) => lself.get(r.name) !== r.flat).concat(rt.filter((r) => rself.get(r.name) !== r.flat)).slice(0, 3).map(show).join(' '));

  // --- Matchers: the same selection through the tree, profefe and Connect ---
  const msel = '{service_name="goapp", pod=~"a.*", region!="eu"}';
  const want2 = ['a-1', 'a-3'].reduce((s, p) => s + pprofSum(tree('goapp', 'cpu', podDir(p)), 'cpu'), 0n);
  const treeSel = pprofSum(tree('goapp', 'cpu', 'pod=~a.*,region!=eu'), 'cpu');
  const ms = await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: msel, start: ALL[0], end: ALL[1] });
  const mp = await c.selectMergeProfile({ profileTypeID: CPU, labelSelector: msel, start: ALL[0], end: ALL[1] });
  fs.writeFileSync(path.join(tmp, `msel-${enc}.pb`), toBinary(ProfileSchema, mp));
  const r = await fetch(`${url}/api/0/profiles/merge?service=goapp&type=cpu&labels=${encodeURIComponent('pod=~a.*,region!=eu')}` +
    '&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00', { headers: { Authorization: `Bearer ${token}` } });
  let profefe = `HTTP ${r.status}`;
  if (r.ok) {
    fs.writeFileSync(path.join(tmp, `msel-profefe-${enc}.pb.gz`), Buffer.from(await r.arrayBuffer()));
    profefe = pprofSum(path.join(tmp, `msel-profefe-${enc}.pb.gz`), 'cpu');
  } else await r.text();
  const all = { tree: treeSel, profefe, connectFlame: ms.flamegraph.total, connectPprof: pprofSum(path.join(tmp, `msel-${enc}.pb`), 'cpu') };
  check(`${enc}: matchers ${msel}: tree pod=~a.*,region!=eu, profefe and Connect give pods a-1 + a-3 (${want2})`,
    Object.values(all).every((v) => v === want2), show(all));
  const none = await c.selectMergeStacktraces({ profileTypeID: CPU, labelSelector: '{service_name="goapp", pod!~"a.*|b.*"}', start: ALL[0], end: ALL[1] });
  check(`${enc}: a selector matching nothing: an empty graph`, !none.flamegraph || none.flamegraph.total === 0n, show(none.flamegraph && none.flamegraph.total));

  // --- Errors through the client --------------------------------------------
  try {
    await c.selectHeatmap({ profileTypeID: CPU, labelSelector: '{service_name="goapp"}', start: ALL[0], end: ALL[1], step: 60 });
    check(`${enc}: SelectHeatmap: unimplemented`, false, 'it answered');
  } catch (e) {
    const ce = ConnectError.from(e);
    check(`${enc}: SelectHeatmap: ConnectError code unimplemented`, ce.code === Code.Unimplemented, `${Code[ce.code]}: ${ce.rawMessage}`);
  }
  try {
    await c.selectMergeStacktraces({ profileTypeID: 'nope', labelSelector: '{service_name="goapp"}', start: ALL[0], end: ALL[1] });
    check(`${enc}: a malformed profile type: invalid_argument`, false, 'it answered');
  } catch (e) {
    const ce = ConnectError.from(e);
    check(`${enc}: a malformed profile type: invalid_argument with a reason`, ce.code === Code.InvalidArgument && ce.rawMessage.length > 0,
      `${Code[ce.code]}: ${ce.rawMessage}`);
  }
  try {
    await c.labelNames({ matchers: ['{service_name=~"("}'], start: ALL[0], end: ALL[1] });
    check(`${enc}: a bad regex: invalid_argument`, false, 'it answered');
  } catch (e) {
    const ce = ConnectError.from(e);
    check(`${enc}: a bad regex in a matcher: invalid_argument`, ce.code === Code.InvalidArgument, `${Code[ce.code]}: ${ce.rawMessage}`);
  }
  // Without the token, many times: the refusal must reach the client, also
  // while it is still sending its (chunked) body.
  const bare = createClient(QuerierService, createConnectTransport({ baseUrl: url, httpVersion: '1.1', useBinaryFormat: binary }));
  const codes = {};
  const N = 50;
  for (let i = 0; i < N; i++) {
    try {
      await bare.labelNames({ matchers: ['{service_name="goapp"}'], start: ALL[0], end: ALL[1] });
      codes.answered = (codes.answered || 0) + 1;
    } catch (e) {
      const ce = ConnectError.from(e);
      const k = `${Code[ce.code]}: ${ce.rawMessage}`;
      codes[k] = (codes[k] || 0) + 1;
    }
  }
  const unauth = Object.entries(codes).filter(([k]) => k.startsWith('Unauthenticated:')).reduce((a, [, v]) => a + v, 0);
  check(`${enc}: without the token: unauthenticated, ${N} of ${N} calls`, unauth === N, show(codes));
}

(async () => {
  try {
    await suite(true);
    await suite(false);
  } catch (e) {
    check('the client ran every call', false, e.stack || String(e));
  }
  // The HTTP status under the Connect code: 501 for what is not served.
  const r = await fetch(`${url}/querier.v1.QuerierService/SelectHeatmap`, { method: 'POST', body: '{}',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` } });
  const body = await r.text();
  check('an unimplemented method: HTTP 501 {"code":"unimplemented"}', r.status === 501 && JSON.parse(body).code === 'unimplemented', `${r.status} ${body}`);
  process.exit(failed ? 1 : 0);
})();
