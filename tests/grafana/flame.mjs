// Browser test of the Grafana query API's flame graph: Pyroscope's own flame
// graph component (@pyroscope/flamegraph from npm, bundled with React by
// esbuild) renders a SelectMergeStacktraces answer, fetched by the generated
// Connect client, in Debian's Chromium (playwright-core, no browser
// download). The test reads the component's table (function, self, total),
// hovers the top rows for the tooltip's share of the total, hovers the root
// frame on the canvas, and compares names and shares with go tool pprof -top
// of the tree's merged.pb.gz of the same range.
//
// usage: node flame.mjs URL TOKEN_FILE MOUNT TMPDIR [SCREENSHOT.png]
// Prints "ok"/"not ok" lines; exits 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { QuerierService } from './gen/querier/v1/querier_pb.js';
import { pprofTop, pprofSum } from './pprof.mjs';

const [url, tokenFile, mnt, tmp, shot] = process.argv.slice(2);
if (!tmp) {
  console.error('usage: node flame.mjs URL TOKEN_FILE MOUNT TMPDIR [SCREENSHOT.png]');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const token = fs.readFileSync(tokenFile, 'utf8').trim();
const TOP = 5;
let failed = 0;
function check(name, cond, detail) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${name}${cond || detail === undefined ? '' : ': ' + detail}`);
  if (!cond) failed++;
}

// The flamebearer profile the component takes, from the API's FlameGraph:
// the same names and levels; CPU nanoseconds as "samples" at 1e9 a second.
function flamebearer(fg, name) {
  return {
    version: 1,
    flamebearer: {
      names: fg.names,
      levels: fg.levels.map((l) => l.values.map(Number)),
      numTicks: Number(fg.total),
      maxSelf: Number(fg.maxSelf),
    },
    metadata: { format: 'single', units: 'samples', sampleRate: 1e9, spyName: 'gospy', name, appName: name },
  };
}

(async () => {
  const svc = 'realgo';
  const file = path.join(mnt, svc, 'cpu', 'all', 'all', 'merged.pb.gz');
  const transport = createConnectTransport({
    baseUrl: url, httpVersion: '1.1', useBinaryFormat: true,
    interceptors: [(next) => (req) => { req.header.set('Authorization', `Bearer ${token}`); return next(req); }],
  });
  const c = createClient(QuerierService, transport);
  const sm = await c.selectMergeStacktraces({ profileTypeID: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds',
    labelSelector: `{service_name="${svc}"}`, start: 0n, end: 4102444800000n, maxNodes: 65536n });
  const total = pprofSum(file, 'cpu');
  check(`SelectMergeStacktraces of ${svc}: total = pprof's (${total})`, sm.flamegraph.total === total, sm.flamegraph.total);

  // The page: the component bundled with React, as an application would.
  const dir = path.join(tmp, 'flame-page');
  fs.mkdirSync(dir, { recursive: true });
  await build({
    entryPoints: [path.join(here, 'page.js')], bundle: true, format: 'iife', platform: 'browser',
    outfile: path.join(dir, 'page.js'), loader: { '.js': 'jsx' }, logLevel: 'error',
    define: { 'process.env.NODE_ENV': '"production"' }, absWorkingDir: here,
  });
  fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><html><head><meta charset="utf-8">' +
    '<link rel="stylesheet" href="page.css"></head><body><div id="root"></div><script src="page.js"></script></body></html>');
  check('esbuild bundles @pyroscope/flamegraph with React', fs.existsSync(path.join(dir, 'page.js')));

  const userDataDir = fs.mkdtempSync(path.join(tmp, 'chromium-'));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 1000 },
  });
  try {
    const page = ctx.pages()[0] || (await ctx.newPage());
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + path.join(dir, 'index.html'));
    await page.evaluate((p) => window.renderProfile(p), flamebearer(sm.flamegraph, svc));
    await page.waitForSelector('[data-testid="table-ui"] tbody tr');
    await page.waitForSelector('canvas[data-testid="flamegraph-canvas"][data-state="rendered"]');

    // The table, as the component sorts it (by self, largest first).
    const rows = await page.$$eval('[data-testid="table-ui"] tbody tr', (trs) => trs.map((tr) => {
      const parts = (tr.getAttribute('data-row') || '').split(';');
      return { name: tr.querySelector('.symbol-name')?.textContent, self: Number(parts[parts.length - 2]),
        total: Number(parts[parts.length - 1]) };
    }));
    const top = pprofTop(file, 'cpu', 'nanoseconds');
    const flat = new Map(top.map((r) => [r.name, Number(r.flat)]));
    check(`the table lists every function pprof -top lists (${rows.length} rows, ${top.length} functions)`,
      top.every((r) => rows.some((x) => x.name === r.name)), top.filter((r) => !rows.some((x) => x.name === r.name)).map((r) => r.name).join(' '));
    const mine = rows.slice(0, TOP);
    const want = top.slice(0, TOP).map((r) => Number(r.flat));
    check(`the table's top ${TOP} frames by self are pprof -top's (${mine.map((r) => r.name).join(', ')})`,
      mine.every((r) => flat.get(r.name) === r.self) && JSON.stringify(mine.map((r) => r.self)) === JSON.stringify(want),
      `${JSON.stringify(mine)} vs ${JSON.stringify(top.slice(0, TOP).map((r) => [r.name, Number(r.flat)]))}`);

    // The tooltip of each top row: its self share, against pprof's flat%.
    for (const r of mine.slice(0, 3)) {
      await page.hover(`[data-testid="table-ui"] tbody tr:has(.symbol-name:text-is("${r.name}"))`);
      const tip = await page.waitForSelector('[data-testid="tooltip"][style*="visible"]');
      const name = await (await tip.$('[data-testid="tooltip-function-name"]')).textContent();
      const cells = await tip.$$eval('[data-testid="tooltip-table"] tbody td', (tds) => tds.map((t) => t.textContent));
      const share = Number((cells[1] || '').match(/\(([\d.]+)%\)/)?.[1]);
      const wantShare = (100 * flat.get(r.name)) / Number(total);
      check(`tooltip of ${r.name}: self ${share}% of the total = pprof -top flat% (${wantShare.toFixed(2)}%)`,
        name === r.name && Math.abs(share - wantShare) < 0.006, `${name}: ${cells.join(' | ')}`);
      await page.mouse.move(1, 1);
    }

    // The root frame on the canvas: the whole of the total.
    const box = await page.locator('canvas[data-testid="flamegraph-canvas"]').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + 5);
    await page.waitForTimeout(200);
    const tipText = await page.evaluate(() => [...document.querySelectorAll('[data-testid="tooltip"]')]
      .map((t) => t.innerText).join('\n'));
    check('hovering the root frame on the canvas: total, 100% of the CPU', /total/.test(tipText) && /Share of CPU:\s*100%/.test(tipText),
      JSON.stringify(tipText));
    if (shot) {
      fs.mkdirSync(path.dirname(shot), { recursive: true });
      await page.screenshot({ path: shot });
    }
    check('no page errors', errors.length === 0, errors.join('; '));
  } finally {
    await ctx.close();
  }
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  check('the browser test ran', false, e.stack || String(e));
  process.exit(1);
});
