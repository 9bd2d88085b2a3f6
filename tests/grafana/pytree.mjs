// Pyroscope's serialized tree (the bytes of a SelectMergeStacktraces answer
// with format PROFILE_FORMAT_TREE), written here from its definition in
// Pyroscope's pkg/model/tree.go (MarshalTruncate, minValue, UnmarshalTree),
// independently of profilefs's encoder, for the Grafana API tests:
//
//   node := uvarint(len(name)) name uvarint(self) uvarint(n_children) child...
//
// depth first from a nameless virtual root; children sorted by name and
// written last first (popped off a stack); past max_nodes, children whose
// total is under the max_nodes-th largest total are summed into a child
// "other" (self only).

function uvarint(out, v) {
  let x = BigInt.asUintN(64, BigInt(v));
  while (x >= 0x80n) { out.push(Number((x & 0x7fn) | 0x80n)); x >>= 7n; }
  out.push(Number(x));
}

function readUvarint(b, at) {
  let x = 0n, shift = 0n;
  for (let i = at; i < b.length && i < at + 10; i++) {
    x |= BigInt(b[i] & 0x7f) << shift;
    if (b[i] < 0x80) return [x, i + 1];
    shift += 7n;
  }
  throw new Error(`malformed tree bytes at ${at}`);
}

const byName = (a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name));

// The tree of a flamebearer flame graph's nodes (flamebearer.mjs nodes(), width
// 4): the roots (depth 1) with { name, self, total, children } sorted by name.
export function treeOfFlame(ns) {
  const byDepth = [];
  for (const n of ns) (byDepth[n.depth] ||= []).push({ ...n, children: [] });
  for (let d = 2; d < byDepth.length; d++) {
    for (const n of byDepth[d]) {
      const p = byDepth[d - 1].find((q) => q.x <= n.x && n.x + n.total <= q.x + q.total);
      p.children.push(n);
    }
  }
  const sortAll = (list) => { list.sort(byName); list.forEach((c) => sortAll(c.children)); return list; };
  return sortAll(byDepth[1] || []);
}

// Pyroscope's minValue: the maxNodes-th largest total, 0 when all fit.
function minValue(roots, maxNodes) {
  if (maxNodes < 1) return 0n;
  const totals = [];
  const walk = (l) => l.forEach((n) => { totals.push(n.total); walk(n.children); });
  walk(roots);
  if (totals.length <= maxNodes) return 0n;
  totals.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  return totals[maxNodes - 1];
}

// MarshalTruncate of a tree (treeOfFlame's form; not modified): a Buffer.
export function marshalTree(roots, maxNodes) {
  const out = [];
  if (roots.length === 0) return Buffer.alloc(0);
  const minVal = minValue(roots, maxNodes);
  const stack = [{ name: '', self: 0n, children: roots }];
  while (stack.length) {
    const n = stack.pop();
    const name = Buffer.from(n.name);
    uvarint(out, name.length);
    for (const c of name) out.push(c);
    uvarint(out, n.self);
    let other = 0n;
    const kept = [];
    for (const c of n.children) {
      if (c.total >= minVal || c.name === 'other') kept.push({ ...c });
      else other += c.total;
    }
    if (other > 0n) {
      const o = kept.find((c) => c.name === 'other');
      if (o) { o.self += other; o.total += other; } else {
        kept.push({ name: 'other', self: other, total: other, children: [] });
        kept.sort(byName);
      }
    }
    stack.push(...kept);
    uvarint(out, kept.length);
  }
  return Buffer.from(out);
}

// UnmarshalTree: the roots { name, self, total, children } of tree bytes.
export function unmarshalTree(b) {
  if (b.length < 2) return [];
  const holder = { children: [], parent: null };
  const parents = [holder];
  let at = 0;
  while (parents.length) {
    const parent = parents.pop();
    let len, self, nk;
    [len, at] = readUvarint(b, at);
    if (at + Number(len) > b.length) throw new Error('malformed tree bytes: name past the end');
    const name = Buffer.from(b.subarray(at, at + Number(len))).toString('utf8');
    at += Number(len);
    [self, at] = readUvarint(b, at);
    [nk, at] = readUvarint(b, at);
    const n = { name, self, total: 0n, children: [], parent };
    parent.children.push(n);
    for (let p = n; p.parent; p = p.parent) p.total += self;
    for (let i = 0n; i < nk; i++) parents.push(n);
  }
  if (at !== b.length) throw new Error(`malformed tree bytes: ${b.length - at} bytes left over`);
  const vroot = holder.children[0];
  if (holder.children.length !== 1 || vroot.name !== '') throw new Error('malformed tree bytes: not one nameless root');
  return vroot.children;
}

// Every node of a tree: [{ name, self, total, depth }].
export function treeNodes(roots) {
  const out = [];
  const walk = (l, d) => l.forEach((n) => { out.push({ name: n.name, self: n.self, total: n.total, depth: d }); walk(n.children, d + 1); });
  walk(roots, 1);
  return out;
}
