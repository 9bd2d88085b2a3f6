// What go tool pprof says of a profile, for the Grafana API tests: the sums
// per sample type (-raw) and the flat value per function (-top), so that the
// answers of the query API are checked against the reference reader of the
// format rather than against profilefs's own code.
import { execFileSync } from 'node:child_process';

function pprof(args) {
  return execFileSync('go', ['tool', 'pprof', '-symbolize=none', ...args],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
}

// { "type/unit": sum } of every sample type, from the Samples section of -raw.
export function pprofSums(file) {
  const out = pprof(['-raw', file]).split('\n');
  const sums = {};
  let types = null;
  for (let i = 0; i < out.length; i++) {
    const line = out[i];
    if (line.startsWith('Samples:')) {
      types = out[++i].trim().split(/\s+/);
      for (const t of types) sums[t] = 0n;
      continue;
    }
    if (line.startsWith('Locations')) break;
    const m = types && line.match(/^\s*(-?\d+(?:\s+-?\d+)*):/);
    if (m) m[1].trim().split(/\s+/).forEach((v, k) => { sums[types[k]] += BigInt(v); });
  }
  return sums;
}

// The sum of one sample type ("cpu" or "cpu/nanoseconds").
export function pprofSum(file, sampleType) {
  const sums = pprofSums(file);
  for (const [k, v] of Object.entries(sums)) {
    if (k === sampleType || k.split('/')[0] === sampleType) return v;
  }
  throw new Error(`${file}: no sample type ${sampleType} in ${Object.keys(sums).join(' ')}`);
}

// The units -top is told to print in, so that its values are exact integers.
const UNIT = { nanoseconds: 'ns', bytes: 'B' };

// [{ name, flat }] of -top (every function, largest flat first).
export function pprofTop(file, sampleType, sampleUnit) {
  const args = ['-top', '-nodefraction=0', '-nodecount=1000000', `-sample_index=${sampleType}`];
  if (UNIT[sampleUnit]) args.push(`-unit=${UNIT[sampleUnit]}`);
  const rows = [];
  let seen = false;
  for (const line of pprof([...args, file]).split('\n')) {
    if (/^\s*flat\s+flat%/.test(line)) { seen = true; continue; }
    if (!seen) continue;
    const m = line.match(/^\s*(-?\d+)[a-zA-Z]*\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+(.*)$/);
    // pprof marks an inlined function's row " (inline)": the name is before.
    if (m) rows.push({ name: m[2].replace(/ \(inline\)$/, ''), flat: BigInt(m[1]) });
  }
  if (!seen) throw new Error(`${file}: no -top table`);
  return rows;
}
