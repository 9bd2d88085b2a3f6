// Reading Pyroscope's "flamebearer" flame graph form (names + levels; each
// level a flat list of nodes, x offset relative to the previous node's end on
// the level) as the API answers it, for the Grafana API tests.

// Every node of a single (width 4) or diff (width 7) flame graph:
// { depth, x, total, self, name } (diff: also xb, totalb, selfb), x absolute.
export function nodes(fg, width) {
  const out = [];
  fg.levels.forEach((lv, depth) => {
    const v = lv.values.map(BigInt);
    let end = 0n, endb = 0n;
    for (let i = 0; i + width <= v.length; i += width) {
      const n = { depth };
      if (width === 7) {
        n.xb = endb + v[i]; n.totalb = v[i + 1]; n.selfb = v[i + 2];
        endb = n.xb + n.totalb;
        i += 3;
      }
      n.x = end + v[i]; n.total = v[i + 1]; n.self = v[i + 2];
      n.name = fg.names[Number(v[i + 3])];
      end = n.x + n.total;
      if (width === 7) i -= 3;
      out.push(n);
    }
  });
  return out;
}

// { name: self } summed over the nodes (key 'self' or 'selfb').
export function selfByName(ns, key = 'self') {
  const m = new Map();
  for (const n of ns) m.set(n.name, (m.get(n.name) || 0n) + n[key]);
  return m;
}

// Whether every node lies within its parent (the level above, same range)
// and its self is its total less its children's: the tree is consistent.
export function consistent(ns) {
  const byDepth = [];
  for (const n of ns) (byDepth[n.depth] ||= []).push(n);
  for (let d = 1; d < byDepth.length; d++) {
    for (const n of byDepth[d]) {
      const p = byDepth[d - 1].find((q) => q.x <= n.x && n.x + n.total <= q.x + q.total);
      if (!p) return `node ${n.name} at depth ${d} has no parent`;
      (p.kids ||= 0n, p.kids += n.total);
    }
  }
  for (const n of ns) {
    if (n.total - (n.kids || 0n) !== n.self) return `node ${n.name}: total ${n.total} - children ${n.kids || 0n} != self ${n.self}`;
  }
  return null;
}
