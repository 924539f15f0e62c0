/*
 * The Perfetto export read by an independent consumer: speedscope (its npm
 * package's built site, opened from file:// in headless Chromium, offline)
 * imports the Chrome trace-event JSON `nklab export --format perfetto` wrote
 * for a built-in kernel. Its own export (the speedscope file format) then says
 * what it understood: a profile per thread it found slices on, with its
 * open/close events. The test compares those with what nklab reports for the
 * same profile: the summary's per-engine counts and event_count, the JSON
 * export's DMA queue of each instruction, the device time.
 * Usage: node speedscope.test.js DIR, DIR holding (see run.sh):
 *   ln.trace.json    layernorm's Perfetto export
 *   ln.summary.json  nklab summary --json of the same profile
 *   ln.json          nklab export --format json of it
 * Prints "N passed, N failed" last.
 */
'use strict';
const fs = require('fs');
const path = require('path');
const { run, assert, eq } = require('./harness');

const DIR = path.resolve(process.argv[2] || '.');
const SITE = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');

const tests = [];
function test(name, fn) { tests.push({ name, fn }); }

const summary = JSON.parse(fs.readFileSync(path.join(DIR, 'ln.summary.json'), 'utf8'));
const exported = JSON.parse(fs.readFileSync(path.join(DIR, 'ln.json'), 'utf8'));
const metric = (k) => { assert(k in summary, 'summary has no ' + k); return summary[k]; };

let imported = null; /* speedscope's own export of what it imported */
let title = '';
const problems = [];

/* Loads the trace the way speedscope's CLI does (a script calling
 * speedscope.loadFileFromBase64, named by #localProfilePath), waits for the
 * import, and saves speedscope's export of it. */
async function load(ctx) {
  const trace = fs.readFileSync(path.join(DIR, 'ln.trace.json'));
  const js = path.join(DIR, 'ln.speedscope-load.js');
  fs.writeFileSync(js, 'speedscope.loadFileFromBase64("ln.trace.json", ' + JSON.stringify(trace.toString('base64')) + ');\n');
  const page = await ctx.newPage();
  page.on('console', (m) => {
    /* speedscope logs its progress; SwiftShader's WebGL performance notes are not speedscope's */
    if ((m.type() === 'error' || m.type() === 'warning') && !/GL Driver Message|WebGL/.test(m.text()))
      problems.push(m.type() + ': ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) problems.push('network request ' + r.url()); });
  await page.goto('file://' + SITE + '#localProfilePath=' + js);
  /* the toolbar names the profile shown and "(k/N)" once the import is done */
  await page.waitForFunction(() => /\(\d+\/\d+\)/.test(document.body.innerText), null, { timeout: 30000 });
  title = await page.evaluate(() => document.body.innerText);
  const dl = page.waitForEvent('download', { timeout: 10000 });
  await page.getByText('Export', { exact: false }).first().click();
  const file = path.join(DIR, 'ln.speedscope.json');
  await (await dl).saveAs(file);
  imported = JSON.parse(fs.readFileSync(file, 'utf8'));
  await page.close();
}

/* Slices speedscope found on the thread named `lane` (its profile name ends
 * in ", LANE (tid N)"), or undefined when it has no such profile. */
function slices(lane) {
  const re = new RegExp(', ' + lane.replace(/[()]/g, '\\$&') + ' \\(tid \\d+\\)$');
  const p = imported.profiles.find((q) => re.test(q.name));
  return p ? p.events.filter((e) => e.type === 'O').length : undefined;
}

test('speedscope imports the trace without an error and offline', async () => {
  eq(problems.length, 0, 'console errors, warnings or requests: ' + problems.join(' | '));
  assert(/Importing as Trace Event Format profile|\(\d+\/\d+\)/.test(title), 'no import: ' + title.slice(0, 300));
  assert(Array.isArray(imported.profiles) && imported.profiles.length > 0, 'no profiles in speedscope\'s export');
  for (const p of imported.profiles) {
    eq(p.type, 'evented', p.name + ': profile type');
    eq(p.unit, 'microseconds', p.name + ': unit');
    const opened = p.events.filter((e) => e.type === 'O').length, closed = p.events.filter((e) => e.type === 'C').length;
    eq(opened, closed, p.name + ': slices opened and closed');
  }
  /* the toolbar counts one profile per lane with slices */
  assert(title.includes('(1/' + imported.profiles.length + ')'), 'toolbar: ' + title.slice(0, 300));
});

test('a lane per engine with the slices nklab counts', async () => {
  /* each instruction is one slice on its engine, a matmul two (LoadStationary
     and MultiplyMoving, docs/timing-model.md) */
  const engines = [['Tensor', 'tensor'], ['Vector', 'vector'], ['Scalar', 'scalar'], ['GpSimd', 'gpsimd'], ['Sync', 'sync']];
  for (const [lane, key] of engines) {
    let want = metric(key + '_engine_instruction_count');
    if (key === 'tensor') want += metric('matmul_instruction_count');
    eq(slices(lane), want > 0 ? want : undefined, lane + ' slices');
  }
  assert(slices('Tensor') > 0 && slices('Vector') > 0 && slices('Scalar') > 0, 'layernorm runs on Tensor, Vector and Scalar');
});

test('a lane per DMA queue with its instructions', async () => {
  const perQueue = new Map();
  for (const ins of exported.instructions)
    if (ins.engine === 'dma') perQueue.set(ins.queue, (perQueue.get(ins.queue) || 0) + 1);
  assert(perQueue.size >= 2, 'layernorm uses several DMA queues: ' + [...perQueue.keys()]);
  let total = 0;
  for (const [q, n] of perQueue) {
    /* a queue whose transfers overlap is drawn on extra threads "DMA qN (2)", ... */
    let got = 0;
    for (const p of imported.profiles) {
      const m = /, DMA q(\d+)(?: \(\d+\))? \(tid \d+\)$/.exec(p.name);
      if (m && +m[1] === q) got += p.events.filter((e) => e.type === 'O').length;
    }
    eq(got, n, 'DMA q' + q + ' slices');
    assert(slices('DMA q' + q) > 0, 'no lane DMA q' + q);
    total += got;
  }
  eq(total, metric('dma_instruction_count'), 'DMA slices');
});

test('every event is a slice, the launch spans the device time', async () => {
  let engineSlices = 0;
  for (const p of imported.profiles)
    if (!/, Launch \(tid \d+\)$/.test(p.name)) engineSlices += p.events.filter((e) => e.type === 'O').length;
  eq(engineSlices, metric('event_count'), 'slices on engine and queue lanes against event_count');
  eq(slices('Launch'), 2, 'launch start-up and tear-down');
  const launch = imported.profiles.find((q) => /, Launch \(tid \d+\)$/.test(q.name));
  const us = metric('total_time') * 1e6; /* seconds in the summary */
  assert(Math.abs(launch.endValue - us) < 1e-3, 'launch ends at ' + launch.endValue + ' us, device time ' + us + ' us');
});

run(tests, { name: 'speedscope', context: { acceptDownloads: true }, setup: load });
