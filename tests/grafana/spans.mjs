// Pyroscope's span profiles through a real Connect client
// (@connectrpc/connect-node, code generated from the project's .proto):
// SelectMergeSpanProfile for one span id gives the samples of that span and
// no others, as go tool pprof -tagfocus=span_id=<id> sums them on the pushed
// profile; with the token of Grafana's data source.
//
// usage: node spans.mjs URL TOKEN_FILE SERVICE SPAN_ID WANT_NS OTHER_SPAN_ID OTHER_NS
// Prints "ok"/"not ok" lines and the figures; exits 1 on any failure.
import fs from 'node:fs';
import { createClient, ConnectError } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { QuerierService } from './gen/querier/v1/querier_pb.js';

const [url, tokenFile, svc, span, want, other, otherWant] = process.argv.slice(2);
if (!otherWant) {
  console.error('usage: node spans.mjs URL TOKEN_FILE SERVICE SPAN_ID WANT_NS OTHER_SPAN_ID OTHER_NS');
  process.exit(2);
}
const token = fs.readFileSync(tokenFile, 'utf8').trim();
let failed = 0;
function check(name, cond, detail) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${name}${cond || detail === undefined ? '' : ': ' + detail}`);
  if (!cond) failed++;
}
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const range = { start: 0n, end: 4102444800000n };
const sel = `{service_name="${svc}"}`;

for (const binary of [true, false]) {
  const enc = binary ? 'proto' : 'json';
  const client = createClient(QuerierService, createConnectTransport({
    baseUrl: url, httpVersion: '1.1', useBinaryFormat: binary,
    interceptors: [(next) => async (req) => { req.header.set('Authorization', `Bearer ${token}`); return next(req); }],
  }));
  const one = await client.selectMergeSpanProfile({
    profileTypeID: CPU, labelSelector: sel, spanSelector: [span], ...range, maxNodes: 1024n,
  });
  const total = one.flamegraph?.total ?? 0n;
  console.log(`# SelectMergeSpanProfile (${enc}) span ${span}: total ${total} ns, want ${want} ns`);
  check(`SelectMergeSpanProfile (${enc}): span ${span} sums its samples only`, String(total) === want,
    `${total} != ${want}`);
  const names = one.flamegraph?.names ?? [];
  check(`SelectMergeSpanProfile (${enc}): a flame graph with frames`, names.length > 1 &&
    names.some((n) => n.includes('spin')), JSON.stringify(names.slice(0, 5)));
  const two = await client.selectMergeSpanProfile({
    profileTypeID: CPU, labelSelector: sel, spanSelector: [span, other], ...range, maxNodes: 16n,
  });
  const t2 = two.flamegraph?.total ?? 0n;
  check(`SelectMergeSpanProfile (${enc}): two spans sum both`, String(t2) === String(BigInt(want) + BigInt(otherWant)),
    `${t2} != ${want} + ${otherWant}`);
  check(`SelectMergeSpanProfile (${enc}): maxNodes 16 bounds the graph`,
    (two.flamegraph?.names ?? []).length <= 17, `${(two.flamegraph?.names ?? []).length} names`);
  const none = await client.selectMergeSpanProfile({
    profileTypeID: CPU, labelSelector: sel, spanSelector: ['00000000deadbeef'], ...range,
  });
  check(`SelectMergeSpanProfile (${enc}): an unknown span is an empty graph`,
    (none.flamegraph?.total ?? 0n) === 0n, `${none.flamegraph?.total}`);
  try {
    await client.selectMergeSpanProfile({ profileTypeID: CPU, labelSelector: sel, spanSelector: ['not-hex!'], ...range });
    check(`SelectMergeSpanProfile (${enc}): a span id that is not hex is refused`, false, 'accepted');
  } catch (e) {
    check(`SelectMergeSpanProfile (${enc}): a span id that is not hex is refused`,
      e instanceof ConnectError && /hex/.test(e.message), String(e));
  }
  const series = await client.series({ matchers: [sel], ...range });
  const keys = new Set(series.labelsSet.flatMap((l) => l.labels.map((p) => p.name)));
  check(`Series (${enc}): no span ids among the labels`, !keys.has('span_id') && !keys.has('span_name') &&
    !keys.has('trace_id'), [...keys].join(','));
  const ln = await client.labelNames({ matchers: [sel], ...range });
  check(`LabelNames (${enc}): no span_id`, !ln.names.includes('span_id') && !ln.names.includes('span_name'),
    ln.names.join(','));
}
process.exit(failed ? 1 : 0);
