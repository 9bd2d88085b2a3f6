// Browser test of a flame graph SVG served from the mounted tree: Debian's
// Chromium (driven by playwright-core, no browser download) opens the file,
// clicks a frame and checks it then fills the width, resets the zoom,
// searches by regex through the Search button's prompt and checks the
// matched share against folded.txt, and saves a screenshot.
//
// usage: node flame.js FLAMEGRAPH.svg SCREENSHOT.png FOLDED.txt [REGEX]
// Prints "ok"/"not ok" lines; exits 1 on any failure.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [svgPath, shotPath, foldedPath, regex = 'leafHash'] = process.argv.slice(2);
if (!svgPath || !shotPath || !foldedPath) {
  console.error('usage: node flame.js FLAMEGRAPH.svg SCREENSHOT.png FOLDED.txt [REGEX]');
  process.exit(2);
}
const WIDTH = 1200, PAD = 10;
let failed = 0;
function check(name, cond, detail) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${name}${cond || !detail ? '' : ': ' + detail}`);
  if (!cond) failed++;
}

// The share of stacks with a frame matching re, from folded.txt.
function expectedShare(re) {
  let total = 0, matched = 0;
  for (const line of fs.readFileSync(foldedPath, 'utf8').split('\n')) {
    const i = line.lastIndexOf(' ');
    if (i < 0) continue;
    const v = Number(line.slice(i + 1));
    total += v;
    if (line.slice(0, i).split(';').some((f) => re.test(f))) matched += v;
  }
  return total > 0 ? (100 * matched) / total : 0;
}

(async () => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'profilefs-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: WIDTH, height: 800 },
  });
  try {
    const page = ctx.pages()[0] || (await ctx.newPage());
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('file://' + path.resolve(svgPath));
    await page.waitForFunction(() => document.getElementById('frames') !== null);
    const nframes = await page.locator('#frames > g').count();
    check(`flame graph has frames (${nframes})`, nframes > 1);

    // A frame below the root, as wide as possible but narrower than the graph.
    const pick = await page.evaluate(() => {
      const gs = [...document.querySelectorAll('#frames > g')];
      let best = -1, bw = 0, y0 = +gs[0].querySelector('rect').getAttribute('y');
      gs.forEach((g, i) => {
        const r = g.querySelector('rect'), w = +r.getAttribute('width');
        if (+r.getAttribute('y') > y0 + 20 && w < 900 && w > bw) { best = i; bw = w; }
      });
      return { index: best, width: bw };
    });
    check('a frame to click', pick.index > 0, JSON.stringify(pick));
    const frame = page.locator('#frames > g').nth(pick.index);
    await frame.locator('rect').click();
    const zoomed = Number(await frame.locator('rect').getAttribute('width'));
    check(`clicked frame fills the width (${pick.width.toFixed(1)} -> ${zoomed.toFixed(1)} px)`,
      Math.abs(zoomed - (WIDTH - 2 * PAD)) < 0.5);
    const hidden = await page.evaluate(() =>
      [...document.querySelectorAll('#frames > g')].filter((g) => g.style.display === 'none').length);
    check(`frames outside the zoomed one are hidden (${hidden})`, hidden > 0);
    check('Reset Zoom shows', await page.locator('#resetzoom').isVisible());
    await page.locator('#resetzoom').click();
    const back = Number(await frame.locator('rect').getAttribute('width'));
    check('reset restores the width', Math.abs(back - pick.width) < 0.05, `${back} vs ${pick.width}`);

    // Search through the button's prompt.
    page.once('dialog', (d) => d.accept(regex));
    await page.locator('#search').click();
    await page.waitForFunction(() => document.getElementById('matched').hasAttribute('data-share'));
    const share = Number(await page.locator('#matched').getAttribute('data-share'));
    const text = await page.locator('#matched').textContent();
    const want = expectedShare(new RegExp(regex));
    check(`search /${regex}/ shows the matched share (${text.trim()}; folded.txt: ${want.toFixed(2)}%)`,
      share > 0 && Math.abs(share - want) < 1.0);
    const pink = await page.evaluate(() =>
      [...document.querySelectorAll('#frames rect')].filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length);
    check(`matching frames are highlighted (${pink})`, pink > 0);
    // Tooltips: every frame has a title with value and share.
    const title = await page.locator('#frames > g').nth(1).locator('title').textContent();
    check(`frames have titles with value and share (${title})`, /\(.*%\)$/.test(title));

    fs.mkdirSync(path.dirname(shotPath), { recursive: true });
    await page.screenshot({ path: shotPath, timeout: 60000 });
    check(`screenshot saved (${shotPath})`, fs.statSync(shotPath).size > 1000);
    check('no script errors', errors.length === 0, errors.join('; '));
  } catch (e) {
    check('browser test ran', false, String(e));
  } finally {
    await ctx.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
})();
