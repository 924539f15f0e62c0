/*
 * Browser tests of the profile viewer: headless Chromium driven by
 * playwright-core. Usage: node viewer.test.js DIR, where DIR holds the pages
 * written by mkprofile (see run.sh):
 *   te.html, te.json   tensor_exp [250, 512] and the facts counted from its program
 *   spmd.html           spmd_tensor_add on a 2 x 2 grid over trn2's two NeuronCores
 *   seq.html            seq_scale_matmul_onchip: two kernels composed into one program
 *   lnbn.html           layernorm_bn (bn_stats, bn_aggr: opcodes the palette does not name)
 *   big.html            a synthetic profile of 1,000,000 instructions
 * Prints "N passed, N failed" last; screenshots go to DIR.
 */
'use strict';
const fs = require('fs');
const path = require('path');
const { run, assert, eq } = require('./harness');

const DIR = path.resolve(process.argv[2] || '.');
const FACTS = JSON.parse(fs.readFileSync(path.join(DIR, 'te.json'), 'utf8'));
const BIG_N = 1000000;
const BIG_LOAD_LIMIT_MS = 30000; /* open + parse + first draw of 1M instructions */
const BIG_DRAW_LIMIT_MS = 1000;  /* one redraw at any zoom */

const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

let ctx;
const errors = [];

async function open(file) {
  const page = await ctx.newPage();
  page.on('console', (m) => { if (m.type() === 'error') errors.push(file + ': ' + m.text()); });
  page.on('pageerror', (e) => errors.push(file + ': ' + e.message));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) errors.push(file + ': network request ' + r.url()); });
  await page.goto('file://' + path.join(DIR, file));
  await page.waitForFunction(() => window.nkview && window.nkview.ready, null, { timeout: BIG_LOAD_LIMIT_MS });
  return page;
}

/* Page point of the first event of instruction i. */
async function pointOf(page, i) {
  return page.evaluate((i) => { const e = nkview.eventsOf(i)[0]; return nkview.eventPoint(e); }, i);
}

async function matchCount(page) {
  await page.waitForSelector('#match-count');
  return +(await page.getAttribute('#match-count', 'data-count'));
}

test('tensor_exp page shows every engine and the DMA queues', async (page) => {
  const rows = await page.evaluate(() => nkview.rows.map((r) => r.name));
  for (const n of ['Tensor', 'Vector', 'Scalar', 'GpSimd', 'Sync']) assert(rows.includes(n), 'row ' + n + ' missing: ' + rows);
  assert(rows.some((r) => /^DMA q\d+$/.test(r)), 'no DMA queue row: ' + rows);
  eq(await page.evaluate(() => nkview.instructionCount), FACTS.instructions, 'instruction count');
  eq(await page.evaluate(() => nkview.eventCount), FACTS.events, 'event count');
});

test('hovering an instruction shows its opcode and file:line', async (page) => {
  for (let i = 0; i < FACTS.instrs.length; i++) {
    const p = await pointOf(page, i);
    await page.mouse.move(p.x, p.y);
    await page.waitForSelector('#tip:not([hidden])');
    const text = await page.textContent('#tip');
    const want = FACTS.instrs[i];
    assert(text.includes('instruction ' + i), 'tooltip of ' + i + ' names another instruction: ' + text);
    assert(text.includes(want.op), 'tooltip of ' + i + ' lacks opcode ' + want.op + ': ' + text);
    assert(text.includes(want.loc), 'tooltip of ' + i + ' lacks ' + want.loc + ': ' + text);
    assert(/start .*duration/.test(text), 'tooltip lacks timing: ' + text);
  }
  await page.mouse.move(2, 2);
});

test('an instruction lowered from a construct says which, one the kernel wrote does not', async (page) => {
  /* tensor_exp: nk_exp is an activation, nk_load a load */
  let acts = 0;
  for (let i = 0; i < FACTS.instrs.length; i++) {
    const p = await pointOf(page, i);
    await page.mouse.move(p.x, p.y);
    await page.waitForSelector('#tip:not([hidden])');
    const tip = await page.textContent('#tip');
    await page.evaluate((i) => nkview.selectInstr(i), i);
    const det = await page.textContent('#details');
    if (FACTS.instrs[i].op === 'activation') {
      acts++;
      assert(tip.includes('lowered from nk_exp'), 'tooltip of ' + i + ': ' + tip);
      assert(det.includes('activation (lowered from nk_exp at line 16)'), 'details of ' + i + ': ' + det);
    } else {
      assert(!tip.includes('lowered from') && !det.includes('lowered from'), FACTS.instrs[i].op + ' ' + i + ' says lowered: ' + tip);
    }
  }
  eq(acts, 2, 'activations of tensor_exp');
  await page.evaluate(() => nkview.selectInstr(-1));
  await page.mouse.move(2, 2);
});

test('searching file:line selects exactly that line\'s instructions', async (page) => {
  for (const [loc, n] of Object.entries(FACTS.lines)) {
    await page.fill('#search', loc);
    await page.press('#search', 'Enter');
    eq(await matchCount(page), n, 'matches of ' + loc);
    eq(await page.locator('#match-list tr.m').count(), n, 'listed matches of ' + loc);
  }
  await page.fill('#search', 'tensor_exp.c:1');
  await page.press('#search', 'Enter');
  eq(await matchCount(page), 0, 'matches of a line without instructions');
});

test('a /regex/ search matches opcodes', async (page) => {
  const loads = FACTS.instrs.filter((x) => x.op === 'load').length;
  await page.fill('#search', '/^load$/');
  await page.press('#search', 'Enter');
  eq(await matchCount(page), loads, 'matches of /^load$/');
  await page.fill('#search', '/(/');
  await page.press('#search', 'Enter');
  assert(await page.evaluate(() => document.getElementById('search').classList.contains('bad')), 'a bad regex is not flagged');
});

test('the source pane opens at the kernel and is as wide as its code', async () => {
  let scrolled = 0;
  for (const file of ['te.html', 'lnbn.html', 'seq.html', 'spmd.html']) {
    const page = await open(file);
    const r = await page.evaluate(() => {
      const body = document.getElementById('srcbody'), rows = [...body.querySelectorAll('.ln')];
      const has = rows.filter((x) => x.classList.contains('has')).map((x) => +x.dataset.src);
      const top = body.getBoundingClientRect().top, bottom = body.getBoundingClientRect().bottom;
      const first = rows.find((x) => +x.dataset.src === Math.min(...has)).getBoundingClientRect();
      const line1 = rows[0].getBoundingClientRect();
      const code = [...body.querySelectorAll('.code')];
      const widest = Math.max(...code.map((c) => c.scrollWidth));
      return { firstTop: first.top - top, firstBottom: first.bottom, bottom, line1Top: line1.top - top,
               atEnd: body.scrollTop >= body.scrollHeight - body.clientHeight - 1, scrollTop: body.scrollTop,
               scrollW: body.scrollWidth, clientW: body.clientWidth, widest,
               pane: document.getElementById('source').getBoundingClientRect().width, win: window.innerWidth };
    });
    await page.close();
    assert(r.firstBottom <= r.bottom && r.firstTop >= 0, file + ': the first line with instructions is in view ' + JSON.stringify(r));
    /* near the top, unless the file ends before it could scroll that far */
    assert(r.atEnd || r.firstTop < 8 * 18, file + ': ... near the top ' + JSON.stringify(r));
    scrolled += r.scrollTop > 0;
    if (r.pane < r.win * 0.42 - 1)  /* not capped: no horizontal scrolling */
      assert(r.scrollW <= r.clientW + 1, file + ': code wider than its pane ' + JSON.stringify(r));
    assert(r.pane >= 260 && r.pane <= Math.max(260, r.win * 0.42) + 1, file + ': pane width ' + JSON.stringify(r));
  }
  assert(scrolled > 0, 'no page had to scroll to its kernel');
});

test('clicking a source line selects its instructions', async (page) => {
  const [loc, n] = Object.entries(FACTS.lines)[1];
  const line = loc.split(':')[1];
  await page.click('#srcbody .ln[data-src="' + line + '"]');
  eq(await matchCount(page), n, 'matches after clicking line ' + line);
  assert((await page.inputValue('#search')).endsWith(':' + line), 'search box does not show the line');
  assert(await page.locator('#srcbody .ln.hit[data-src="' + line + '"]').count() === 1, 'line not highlighted');
});

test('clicking an instruction shows details and jumps to its line', async (page) => {
  const i = FACTS.instrs.findIndex((x) => x.ndep > 0);
  const p = await pointOf(page, i);
  await page.mouse.click(p.x, p.y);
  const det = await page.textContent('#details');
  assert(det.includes('#' + i + ' ' + FACTS.instrs[i].op), 'details heading: ' + det.slice(0, 80));
  assert(det.includes('Predecessors') && det.includes('Successors'), 'no dependency lists');
  const preds = await page.locator('#details a.jump[data-instr]').count();
  assert(preds >= FACTS.instrs[i].ndep, 'dependency links ' + preds + ' < ' + FACTS.instrs[i].ndep);
  const line = FACTS.instrs[i].loc.split(':')[1];
  eq(await page.getAttribute('#srcbody .ln.cur', 'data-src'), line, 'current source line');
  eq(await page.evaluate(() => nkview.selected), i, 'selected instruction');
});

test('wheel and drag zoom, reset restores the whole kernel', async (page) => {
  const box = await page.locator('#tl').boundingBox();
  const span = () => page.evaluate(() => nkview.view.t1 - nkview.view.t0);
  const full = await span();
  await page.mouse.move(box.x + box.width / 2, box.y + 40);
  await page.mouse.wheel(0, -400);
  await page.waitForFunction((f) => nkview.view.t1 - nkview.view.t0 < f * 0.9, full);
  await page.click('#zoom-reset');
  const reset = await span();
  assert(Math.abs(reset - full) < 1e-6 * full, 'reset span ' + reset + ' != ' + full);
  /* drag over a quarter of the plot: the view becomes that range */
  const x0 = box.x + 92 + (box.width - 102) * 0.25, x1 = box.x + 92 + (box.width - 102) * 0.5;
  const t0 = await page.evaluate(() => nkview.view.t0), t1 = await page.evaluate(() => nkview.view.t1);
  await page.mouse.move(x0, box.y + 60);
  await page.mouse.down();
  await page.mouse.move((x0 + x1) / 2, box.y + 70, { steps: 3 });
  await page.mouse.move(x1, box.y + 80, { steps: 3 });
  await page.mouse.up();
  const z = await span();
  const want = (t1 - t0) * 0.25;
  assert(Math.abs(z - want) < 0.02 * want, 'drag zoom span ' + z + ', want ' + want);
  await page.click('#zoom-reset');
});

test('keys as in Perfetto: W/S zoom around the middle, A/D pan, 0 resets', async (page) => {
  await page.click('#zoom-reset');
  const v = () => page.evaluate(() => ({ t0: nkview.view.t0, t1: nkview.view.t1 }));
  const full = await v(), span = full.t1 - full.t0;
  await page.locator('#tl').hover();
  await page.keyboard.press('w');
  let z = await v();
  assert(Math.abs((z.t1 - z.t0) - 0.7 * span) < 1e-6 * span, 'W: span ' + (z.t1 - z.t0) + ', want ' + 0.7 * span);
  assert(Math.abs((z.t0 + z.t1) / 2 - (full.t0 + full.t1) / 2) < 1e-6 * span, 'W keeps the middle');
  await page.keyboard.press('w');
  z = await v();
  const s2 = z.t1 - z.t0;
  await page.keyboard.press('d');
  const r = await v();
  assert(Math.abs((r.t0 - z.t0) - 0.2 * s2) < 1e-6 * span && Math.abs((r.t1 - r.t0) - s2) < 1e-6 * span,
    'D pans right by a fifth of the view: ' + JSON.stringify([z, r]));
  await page.keyboard.press('a');
  const l = await v();
  assert(Math.abs(l.t0 - z.t0) < 1e-6 * span, 'A pans back: ' + JSON.stringify([z, l]));
  await page.keyboard.press('s');
  const o = await v();
  assert(Math.abs((o.t1 - o.t0) - s2 / 0.7) < 1e-6 * span, 'S zooms out: ' + (o.t1 - o.t0));
  await page.keyboard.press('0');
  const b = await v();
  assert(Math.abs(b.t0 - full.t0) < 1e-9 * span && Math.abs(b.t1 - full.t1) < 1e-9 * span, '0 resets');
});

test('every opcode in the legend has a colour of its own', async () => {
  for (const file of ['te.html', 'spmd.html', 'seq.html', 'lnbn.html']) {
    const page = await open(file);
    const lg = await page.evaluate(() => nkview.legend());
    await page.close();
    assert(lg.length >= 3, file + ': legend of ' + lg.length);
    const seen = new Map();
    for (const { name, color } of lg) {
      assert(!seen.has(color), file + ': ' + name + ' and ' + seen.get(color) + ' share ' + color);
      seen.set(color, name);
    }
  }
});

test('shift-drag box selection summarizes the region', async (page) => {
  const box = await page.locator('#tl').boundingBox();
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + 93, box.y + 28);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 12, box.y + 250, { steps: 4 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  eq(await matchCount(page), FACTS.instructions, 'box over everything');
  const text = await page.textContent('#matches');
  assert(text.includes('box duration') && text.includes('Opcodes') && text.includes('bytes'), 'box summary: ' + text.slice(0, 200));
});

test('summary tab lists metrics and a sortable opcode table', async (page) => {
  await page.click('#tabs button[data-tab="summary"]');
  const total = await page.textContent('[data-metric="total_time"]');
  assert(/^[\d.]+ (ns|us|ms)$/.test(total), 'total time: ' + total);
  eq(await page.textContent('[data-metric="instruction_count"]'), String(FACTS.instructions), 'instruction count metric');
  const ops = new Set(FACTS.instrs.map((x) => x.op));
  eq(await page.locator('#optable tbody tr').count(), ops.size, 'opcode rows');
  await page.click('#optable th[data-k="opcode"]');
  const names = await page.$$eval('#optable tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
  eq(names.join(','), [...names].sort().join(','), 'sorted by opcode');
  await page.click('#tabs button[data-tab="insights"]');
  assert((await page.textContent('#tab-insights')).includes('Insights'), 'insights tab');
  await page.click('#tabs button[data-tab="timeline"]');
});

test('insights tab lists the findings and shows one on the timeline', async (page) => {
  const found = await page.evaluate(() => {
    const i = nkview.data.insights;
    return (Array.isArray(i) ? i : (i && i.findings) || []).map((f) => ({ title: f.title, ranges: f.ranges || [], n: (f.instrs || []).length }));
  });
  assert(found.length >= 1, 'tensor_exp has findings: ' + found.length);
  await page.click('#tabs button[data-tab="insights"]');
  eq(await page.locator('#tab-insights .insight').count(), found.length, 'one entry per finding');
  const k = found.findIndex((f) => f.ranges.length);
  assert(k >= 0, 'a finding with a time range');
  assert((await page.textContent('#tab-insights')).includes(found[k].title), 'the finding title is shown');
  await page.click('#tab-insights [data-finding="' + k + '"]');
  assert(await page.isVisible('#tab-timeline'), 'back on the timeline');
  const v = await page.evaluate(() => [nkview.view.t0, nkview.view.t1]);
  let lo = Infinity, hi = -Infinity;
  for (const [x, y] of found[k].ranges) { lo = Math.min(lo, x); hi = Math.max(hi, y); }
  assert(v[0] <= lo && v[1] >= hi && v[1] - v[0] < (hi - lo) * 1.5 + 2, 'zoomed to the evidence: view ' + v + ', ranges ' + lo + '..' + hi);
  if (found[k].n) eq(await page.evaluate(() => nkview.markCount), found[k].n, 'the finding\'s instructions are marked');
  await page.evaluate(() => nkview.resetView());
});

test('screenshot of the tensor_exp timeline', async (page) => {
  await page.fill('#search', Object.keys(FACTS.lines)[1]);
  await page.press('#search', 'Enter');
  const p = await pointOf(page, 1);
  await page.mouse.move(p.x, p.y);
  await page.waitForSelector('#tip:not([hidden])');
  await page.screenshot({ path: path.join(DIR, 'viewer.png') });
  assert(fs.statSync(path.join(DIR, 'viewer.png')).size > 10000, 'screenshot too small');
});

test('zoomed in, bars carry their names; zoomed out they do not', async (page) => {
  const wide = await page.evaluate(() => { nkview.resetView(); nkview.draw(); return nkview.labelsDrawn; });
  const i = FACTS.instrs.findIndex((x) => x.op === 'activation');
  const close = await page.evaluate((i) => { const t = nkview.instr(i); nkview.setView(t.start, t.end); nkview.draw(); return nkview.labelsDrawn; }, i);
  assert(close >= 1, 'no label when one instruction fills the view');
  assert(close >= wide, 'fewer labels zoomed in (' + close + ') than out (' + wide + ')');
  await page.evaluate(() => { nkview.resetView(); nkview.draw(); });
});

test('a DMA tooltip gives bytes, GB/s, queue and DMA engines', async (page) => {
  const i = FACTS.instrs.findIndex((x) => x.op === 'load');
  const p = await pointOf(page, i);
  await page.mouse.move(p.x, p.y);
  await page.waitForSelector('#tip:not([hidden])');
  const text = await page.textContent('#tip');
  assert(/[\d.]+ KiB at [\d.]+ GB\/s · queue \d+ · DMA engines \d+\.\.\d+ \(\d+\)/.test(text), 'DMA tooltip: ' + text);
  await page.mouse.move(1, 1);
});

test('selecting an instruction draws arrows to and from its dependencies', async (page) => {
  const i = FACTS.instrs.findIndex((x) => x.op === 'activation');
  const n = await page.evaluate((i) => { nkview.resetView(); nkview.selectInstr(i); nkview.draw(); return { a: nkview.arrowsDrawn, d: nkview.instr(i).deps.length + nkview.instr(i).succs.length }; }, i);
  assert(n.d > 0, 'the activation has no dependency');
  eq(n.a, n.d, 'arrows drawn');
  await page.evaluate(() => { nkview.selectInstr(-1); nkview.draw(); });
});

test('markers show the interval between them, are kept per profile and saved beside it', async () => {
  const page = await open('te.html');
  await page.evaluate(() => { nkview.resetView(); nkview.addMarker(1000, 'a'); nkview.addMarker(3500, ''); nkview.draw(); });
  eq(JSON.stringify(await page.evaluate(() => nkview.markers)), '[{"t":1000,"note":"a"},{"t":3500,"note":""}]', 'markers');
  /* M at the mouse adds one; Shift-M removes the nearest */
  const p = await page.evaluate(() => { const b = document.getElementById('tl').getBoundingClientRect(); return { x: b.left + nkview.xOf(5000), y: b.top + nkview.rowMid(0) }; });
  await page.evaluate(() => document.activeElement && document.activeElement.blur()); /* keys go to the page, not the search box */
  await page.mouse.move(p.x, p.y);
  await page.keyboard.press('m');
  const t3 = await page.evaluate(() => nkview.markers.map((m) => m.t));
  eq(t3.length, 3, 'M adds a marker');
  assert(Math.abs(t3[2] - 5000) < 100, 'marker at the mouse: ' + t3);
  await page.keyboard.press('Shift+M');
  eq(await page.evaluate(() => nkview.markers.length), 2, 'Shift-M removes the nearest');
  /* kept in the browser: a reload shows them again */
  await page.reload();
  await page.waitForFunction(() => window.nkview && window.nkview.ready);
  eq(await page.evaluate(() => nkview.markers.length), 2, 'markers after a reload');
  /* the notes file: nklab view embeds DIR/KERNEL.notes.json, and a page without local markers shows them */
  const notes = JSON.parse(await page.evaluate(() => nkview.notesJson()));
  eq(notes.format, 'nklab-notes', 'notes format');
  fs.writeFileSync(path.join(DIR, 'notes.nkp.notes.json'), JSON.stringify(notes));
  await page.evaluate(() => { nkview.removeMarkerNear(0); nkview.removeMarkerNear(0); });
  await page.close();
});

test('a selected instruction names its loop iteration and marks its siblings', async (page) => {
  const i = FACTS.instrs.findIndex((x) => x.op === 'activation');
  await page.evaluate((i) => nkview.selectInstr(i), i);
  const text = await page.textContent('#details');
  assert(/iteration \d+ of 2 of the loop at line \d+/.test(text), 'loop details: ' + text);
  await page.click('#details [data-siblings]');
  eq(await page.evaluate(() => nkview.markCount), FACTS.instrs.filter((x) => x.op === 'activation').length, 'siblings marked');
  await page.click('#details [data-iteration]');
  eq(await page.evaluate(() => nkview.markCount), 3, "the iteration's load, activation and store");
  await page.evaluate(() => { nkview.selectInstr(-1); });
  await page.keyboard.press('Escape');
});

test('the kernel launch is drawn as its own region', async (page) => {
  const g = await page.evaluate(() => nkview.regions.map((r) => r.kind + '@' + r.core + ':' + r.start + '-' + r.end));
  eq(g.length, 2, 'a start-up and a tear-down: ' + g);
  assert(/^start-up@0:0-/.test(g[0]) && /^tear-down@0:/.test(g[1]), 'regions: ' + g);
  const end = await page.evaluate(() => nkview.regions[1].end);
  eq(Math.round(end), Math.round(await page.evaluate(() => nkview.data.total_ns)), 'the tear-down ends the kernel');
  /* painted: the middle of the start-up, on an idle row, is not the plain background */
  const px = await page.evaluate(() => {
    const c = document.getElementById('tl'), g = c.getContext('2d'), r0 = nkview.regions[0], s = c.width / c.clientWidth;
    nkview.resetView(); nkview.draw();
    const r = nkview.rows.findIndex((w) => w.name === 'GpSimd');
    const d = g.getImageData(Math.round(nkview.xOf((r0.start + r0.end) / 2) * s), Math.round(nkview.rowMid(r) * s), 1, 1).data;
    return [d[0], d[1], d[2]].join(',');
  });
  assert(!['255,255,255', '247,248,250'].includes(px), 'no launch region drawn: ' + px);
});

test('the memory view draws every tile over its lifetime, with its line on hover', async (page) => {
  await page.click('#tabs button[data-tab=memory]');
  const n = await page.evaluate(() => { nkview.resetView(); nkview.showTab('memory'); return nkview.memRects().length; });
  const sbuf = await page.evaluate(() => nkview.data.tiles.mem.filter((m) => m === 0).length);
  assert(sbuf > 0, 'no SBUF tile in the data');
  eq(n, sbuf, 'SBUF tiles drawn');
  /* every drawn tile lies inside the capacity and its lifetime is inside the kernel */
  const bad = await page.evaluate(() => {
    const T = nkview.data.tiles;
    let b = 0;
    for (let k = 0; k < T.mem.length; k++)
      if (T.addr[k] < 0 || T.addr[k] + T.bytes[k] > (T.mem[k] ? T.psum_bytes : T.sbuf_bytes) || !(T.t0[k] <= T.t1[k])) b++;
    return b;
  });
  eq(bad, 0, 'tiles outside the memory or with a negative lifetime');
  const r = await page.evaluate(() => { const r = nkview.memRects()[0], b = document.getElementById('mem').getBoundingClientRect(); return { x: b.left + r.x + r.w / 2, y: b.top + r.y + r.h / 2, k: r.k }; });
  await page.mouse.move(r.x, r.y);
  await page.waitForSelector('#memtip:not([hidden])');
  const tip = await page.textContent('#memtip');
  assert(/tensor_exp\.c:\d+ .* SBUF \[\d+, \d+\) x \d+ partitions .* live /.test(tip), 'memory tooltip: ' + tip);
  await page.click('#tabs button[data-tab=timeline]');
});

test('an SPMD profile shows a row group per NeuronCore', async () => {
  const page = await open('spmd.html');
  const rows = await page.evaluate(() => nkview.rows.map((r) => r.name + '@' + r.core));
  for (const c of [0, 1])
    for (const n of ['Tensor', 'Vector', 'Scalar', 'GpSimd', 'Sync'])
      assert(rows.includes('NC' + c + ' ' + n + '@' + c), 'row NC' + c + ' ' + n + ' missing: ' + rows);
  assert(rows.some((r) => /^NC1 DMA q\d+@1$/.test(r)), 'no DMA queue row of core 1: ' + rows);
  /* the groups are contiguous: core 0's rows, then core 1's */
  const cores = await page.evaluate(() => nkview.rows.map((r) => r.core));
  eq(cores.join(''), cores.slice().sort().join(''), 'row order by core');
  /* every event is drawn on a row of its instruction's core */
  const bad = await page.evaluate(() => {
    let n = 0;
    for (let e = 0; e < nkview.eventCount; e++) { const ev = nkview.event(e); if (nkview.rows[ev.row].core !== nkview.data.instr.core[ev.instr]) n++; }
    return n;
  });
  eq(bad, 0, 'events on another core\'s row');
  await page.close();
});

test('a sequence of kernels shows a band per kernel', async () => {
  const page = await open('seq.html');
  const ks = await page.evaluate(() => nkview.kernels.map((k) => ({ name: k.name, t0: k.t0, t1: k.t1, n: k.n })));
  eq(ks.map((k) => k.name).join(','), 'scale,matmul_basic', 'kernels');
  assert(ks[0].t1 <= ks[1].t0, 'kernels overlap: ' + JSON.stringify(ks));
  eq(ks[0].n + ks[1].n, await page.evaluate(() => nkview.instructionCount), 'instructions in the kernels');
  /* the band is painted: a pixel in the middle of the first kernel's span, below the axis, is tinted */
  const tint = await page.evaluate(() => {
    const c = document.querySelector('canvas'), g = c.getContext('2d'), k = nkview.kernels[0];
    nkview.resetView(); nkview.draw();
    const r = nkview.rows.findIndex((w) => w.name === 'GpSimd'), s = c.width / c.clientWidth; /* an idle row */
    const d = g.getImageData(Math.round(nkview.xOf((k.t0 + k.t1) / 2) * s), Math.round(nkview.rowMid(r) * s), 1, 1).data;
    return [d[0], d[1], d[2]];
  });
  const plain = ['255,255,255', '247,248,250'];
  assert(!plain.includes(tint.join(',')), 'no band at the first kernel: ' + tint);
  await page.close();
});

test('a notes file beside the profile brings its markers into the page', async () => {
  const { execFileSync } = require('child_process');
  execFileSync(process.env.NK || 'build/nklab', ['view', path.join(DIR, 'notes.nkp'), '-o', path.join(DIR, 'notes.html')], { stdio: 'ignore' });
  const page = await open('notes.html');
  eq(JSON.stringify(await page.evaluate(() => nkview.markers.map((m) => m.t))), '[1000,3500]', 'markers from the notes file');
  await page.close();
});

test('a compared profile is drawn on the same time axis, its lines matched', async () => {
  const page = await open('cmp.html');
  const c = await page.evaluate(() => { nkview.resetView(); nkview.draw(); return { n: nkview.compare.events, d: nkview.compare.drawn, k: nkview.compare.kernel }; });
  assert(c.n > 0 && c.d === c.n, 'compared events drawn: ' + JSON.stringify(c));
  eq(c.k, 'nk_kernel_tensor_exp_pipelined', 'the compared kernel');
  const i = await page.evaluate(() => { for (let i = 0; i < nkview.instructionCount; i++) if (nkview.instr(i).op === 'activation') return i; return -1; });
  await page.evaluate((i) => nkview.selectInstr(i), i);
  const text = await page.textContent('#details');
  assert(/Compared with nk_kernel_tensor_exp_pipelined.*this line: 2 instructions, busy .* here; 4 instructions, busy .* there/.test(text.replace(/\n/g, ' ')), 'compare details: ' + text);
  await page.close();
});

test('1,000,000 instructions render within bounds', async () => {
  const t = Date.now();
  const page = await open('big.html');
  const loadMs = Date.now() - t;
  eq(await page.evaluate(() => nkview.instructionCount), BIG_N, 'instructions');
  assert(loadMs < BIG_LOAD_LIMIT_MS, 'load took ' + loadMs + ' ms');
  const draws = [];
  draws.push(await page.evaluate(() => { nkview.draw(); return nkview.lastDrawMs; }));
  draws.push(await page.evaluate(() => { nkview.setView(nkview.view.t1 * 0.4, nkview.view.t1 * 0.41); nkview.draw(); return nkview.lastDrawMs; }));
  draws.push(await page.evaluate(() => { nkview.setView(5000, 9000); nkview.draw(); return nkview.lastDrawMs; }));
  for (const d of draws) assert(d < BIG_DRAW_LIMIT_MS, 'draw took ' + d + ' ms');
  const tSearch = Date.now();
  await page.fill('#search', 'synthetic.c:6');
  await page.press('#search', 'Enter');
  eq(await matchCount(page), Math.floor((BIG_N - 3) / 6) + 1, 'matches of line 6 (every 6th instruction from #2)');
  const searchMs = Date.now() - tSearch;
  await page.screenshot({ path: path.join(DIR, 'viewer-1m.png') });
  console.log('  1M instructions: load ' + loadMs + ' ms, draws ' + draws.map((d) => d.toFixed(0)).join('/') + ' ms, line search ' + searchMs + ' ms');
  await page.close();
}, true);

run(tests, { name: 'browser', errors, setup: async (c) => { ctx = c; return open('te.html'); } });
