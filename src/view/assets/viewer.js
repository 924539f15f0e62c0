/* nklab profile viewer: reads the profile embedded in #nk-data (see
 * docs/viewer.md) and draws the timeline on a canvas. Built for a million
 * instructions: columnar typed arrays, binary search over start-sorted
 * events, sub-pixel bars merged per row. */
(function () {
'use strict';

const D = JSON.parse(document.getElementById('nk-data').textContent);
const $ = (id) => document.getElementById(id);
const t0Load = performance.now();

/* ---------------------------------------------------------------- data */

const NI = D.instr.n, NE = D.events.n;
const iOp = Uint8Array.from(D.instr.op), iEngine = Uint8Array.from(D.instr.engine);
const iQueue = Uint16Array.from(D.instr.queue), iLoc = Int32Array.from(D.instr.loc);
const iOpnd = Int32Array.from(D.instr.opnd), iBytes = Float64Array.from(D.instr.bytes);
/* operand templates: "\x01" marks where the next number of opnd_num goes */
const tplParts = D.strings.map((s) => s.split('\x01'));
const opndNum = D.instr.opnd_num, numOff = new Int32Array(NI + 1);
for (let i = 0; i < NI; i++) numOff[i + 1] = numOff[i] + tplParts[iOpnd[i]].length - 1;
const depOff = new Int32Array(NI + 1), deps = new Int32Array(D.instr.dep_delta.length);
{
  let k = 0;
  for (let i = 0; i < NI; i++) {
    depOff[i] = k;
    for (let d = 0; d < D.instr.ndep[i]; d++, k++) deps[k] = i - D.instr.dep_delta[k];
  }
  depOff[NI] = k;
}
const evInstr = new Int32Array(NE), evRow = Uint16Array.from(D.events.row), evKind = Uint8Array.from(D.events.kind);
const evStart = new Float64Array(NE), evEnd = new Float64Array(NE);
const iStart = new Float64Array(NI).fill(Infinity), iEnd = new Float64Array(NI).fill(-Infinity);
const iFirstEv = new Int32Array(NI).fill(-1);
{
  let ins = 0, ps = 0;
  const di = D.events.instr_delta, ds = D.events.start_ps_delta, du = D.events.dur_ps;
  for (let e = 0; e < NE; e++) {
    ins += di[e]; ps += ds[e];
    evInstr[e] = ins; evStart[e] = ps / 1000; evEnd[e] = (ps + du[e]) / 1000;
    if (evStart[e] < iStart[ins]) iStart[ins] = evStart[e];
    if (evEnd[e] > iEnd[ins]) iEnd[ins] = evEnd[e];
    if (iFirstEv[ins] < 0) iFirstEv[ins] = e;
  }
}
D.events.instr_delta = D.events.start_ps_delta = D.events.dur_ps = D.events.row = D.events.kind = null;
D.instr.op = D.instr.engine = D.instr.queue = D.instr.loc = D.instr.opnd = D.instr.bytes = null;
/* Sequences: each kernel's span [first start, last end], drawn as a band */
const kernelSpans = [];
if (D.kernels && D.kernels.length > 1 && D.instr.seg) {
  for (let k = 0; k < D.kernels.length; k++) kernelSpans.push({ name: D.kernels[k], t0: Infinity, t1: -Infinity, n: 0 });
  for (let i = 0; i < NI; i++) {
    const s = kernelSpans[D.instr.seg[i]];
    if (!s || !(iEnd[i] >= iStart[i])) continue;
    if (iStart[i] < s.t0) s.t0 = iStart[i];
    if (iEnd[i] > s.t1) s.t1 = iEnd[i];
    s.n++;
  }
  for (let k = kernelSpans.length - 1; k >= 0; k--) if (!kernelSpans[k].n) kernelSpans.splice(k, 1);
}
let total = D.total_ns;
let CMP = null; /* a compared profile (nklab view A --compare B), on the same time axis */
try { CMP = JSON.parse(($('nk-cmp') || {}).textContent || 'null'); } catch (e) { CMP = null; }
if (CMP && CMP.total_ns > total) total = CMP.total_ns;
for (let e = 0; e < NE; e++) if (evEnd[e] > total) total = evEnd[e];
if (!(total > 0)) total = 1;

const ROWS = D.rows, NR = ROWS.length;
const rowEv = [], rowMaxDur = new Float64Array(NR);
{
  const cnt = new Int32Array(NR);
  for (let e = 0; e < NE; e++) cnt[evRow[e]]++;
  for (let r = 0; r < NR; r++) rowEv.push(new Int32Array(cnt[r]));
  cnt.fill(0);
  for (let e = 0; e < NE; e++) {
    const r = evRow[e];
    rowEv[r][cnt[r]++] = e;
    const d = evEnd[e] - evStart[e];
    if (d > rowMaxDur[r]) rowMaxDur[r] = d;
  }
}
/* Lanes: a DMA queue can have several transfers in flight; overlapping bars
 * of a row go to separate lanes (up to MAX_LANES, then they share). */
const MAX_LANES = 4, evLane = new Uint8Array(NE), rowLanes = new Uint8Array(NR).fill(1);
for (let r = 0; r < NR; r++) {
  const ends = [];
  for (const e of rowEv[r]) {
    let k = 0;
    while (k < ends.length && ends[k] > evStart[e]) k++;
    if (k >= MAX_LANES) { k = 0; for (let j = 1; j < MAX_LANES; j++) if (ends[j] < ends[k]) k = j; }
    ends[k] = evEnd[e]; evLane[e] = k;
  }
  rowLanes[r] = Math.max(1, Math.min(MAX_LANES, ends.length));
}
const locFile = D.locs.file, locLine = D.locs.line;
const files = D.files.map((f) => ({ path: f.path, text: f.text, base: f.path.split('/').pop() }));

/* A compared profile (nklab view A --compare B): its events, decoded as the
 * main ones, drawn as a strip at the bottom of the row of the same name,
 * and its time per source line (matched by file name and line text). */
const cmp = { n: 0, row: null, start: null, end: null, rowOf: null, lineTime: new Map(), lineCount: new Map() };
if (CMP && CMP.events) {
  const E = CMP.events, n = E.n, rowOf = CMP.rows.map((r) => ROWS.findIndex((w) => w.name === r.name));
  cmp.n = n; cmp.row = new Int32Array(n); cmp.start = new Float64Array(n); cmp.end = new Float64Array(n); cmp.rowOf = rowOf;
  const cf = CMP.files.map((f) => ({ base: f.path.split('/').pop(), lines: (f.text || '').split('\n') }));
  const ist = new Float64Array(CMP.instr.n).fill(Infinity), ien = new Float64Array(CMP.instr.n).fill(-Infinity);
  let ins = 0, ps = 0;
  for (let e = 0; e < n; e++) {
    ins += E.instr_delta[e]; ps += E.start_ps_delta[e];
    cmp.row[e] = rowOf[E.row[e]] !== undefined ? rowOf[E.row[e]] : -1;
    cmp.start[e] = ps / 1000; cmp.end[e] = (ps + E.dur_ps[e]) / 1000;
    if (cmp.start[e] < ist[ins]) ist[ins] = cmp.start[e];
    if (cmp.end[e] > ien[ins]) ien[ins] = cmp.end[e];
  }
  for (let i = 0; i < CMP.instr.n; i++) {
    const l = CMP.instr.loc[i], f = CMP.locs.file[l], ln = CMP.locs.line[l];
    if (f === undefined || !cf[f]) continue;
    const key = cf[f].base + '\n' + (cf[f].lines[ln - 1] || '').trim();
    cmp.lineTime.set(key, (cmp.lineTime.get(key) || 0) + Math.max(0, ien[i] - ist[i]));
    cmp.lineCount.set(key, (cmp.lineCount.get(key) || 0) + 1);
  }
}
const fileLines = files.map((f) => (f.text || '').split('\n'));
function lineKey(i) {
  const l = locOf(i), f = files[l.file];
  return f ? f.base + '\n' + (fileLines[l.file][l.line - 1] || '').trim() : '';
}
let mineByLine = null; /* this profile's time and count per line key, built on first use */
function mineOf(k) {
  if (!mineByLine) {
    mineByLine = new Map();
    for (let j = 0; j < NI; j++) {
      const key = lineKey(j), m = mineByLine.get(key) || { n: 0, t: 0 };
      m.n++; m.t += iEnd[j] - iStart[j];
      mineByLine.set(key, m);
    }
  }
  return mineByLine.get(k) || { n: 0, t: 0 };
}
let cmpDrawn = 0;
function drawCompare() {
  cmpDrawn = 0;
  if (!cmp.n) return;
  ctx.fillStyle = 'rgba(52,61,75,.75)';
  for (let e = 0; e < cmp.n; e++) {
    const r = cmp.row[e];
    if (r < 0 || cmp.end[e] < view.t0 || cmp.start[e] > view.t1) continue;
    const a = Math.max(LABEL_W, X(cmp.start[e])), b = Math.min(LABEL_W + plotW(), X(cmp.end[e]));
    ctx.fillRect(a, rowY(r) + rowH(r) - 4, Math.max(1, b - a), 3);
    cmpDrawn++;
  }
}
function compareInfo(i) {
  if (!cmp.n) return '';
  const k = lineKey(i), n = cmp.lineCount.get(k) || 0, m = mineOf(k), mine = m.t, mn = m.n;
  return '<h4>Compared with ' + esc(CMP.kernel) + '</h4><div>this line: ' + mn + ' instruction' + (mn === 1 ? '' : 's') +
    ', busy ' + fmtNs(mine) + ' here; ' + (n ? n + ' instruction' + (n === 1 ? '' : 's') + ', busy ' + fmtNs(cmp.lineTime.get(k)) + ' there'
      : 'no instruction there') + '</div>';
}



function opName(i) { return D.ops[iOp[i]] || '?'; }
function evName(e) { const k = evKind[e]; return k === 1 || k === 2 ? D.kinds[k] : opName(evInstr[e]); }
function operands(i) {
  const parts = tplParts[iOpnd[i]];
  if (!parts) return '';
  let s = parts[0];
  for (let k = 1; k < parts.length; k++) s += opndNum[numOff[i] + k - 1] + parts[k];
  return s;
}
function locOf(i) {
  const l = iLoc[i];
  if (l < 0 || l >= locLine.length) return { file: -1, path: '?', line: 0 };
  const f = locFile[l];
  return { file: f, path: files[f] ? files[f].path : '?', base: files[f] ? files[f].base : '?', line: locLine[l] };
}
function locText(i) { const l = locOf(i); return (l.base || l.path) + ':' + l.line; }

let succOff = null, succs = null; /* successors, built on first use */
function successors(i) {
  if (!succOff) {
    succOff = new Int32Array(NI + 1);
    for (let k = 0; k < deps.length; k++) succOff[deps[k] + 1]++;
    for (let j = 0; j < NI; j++) succOff[j + 1] += succOff[j];
    succs = new Int32Array(deps.length);
    const fill = succOff.slice(0, NI);
    for (let j = 0; j < NI; j++)
      for (let k = depOff[j]; k < depOff[j + 1]; k++) succs[fill[deps[k]]++] = j;
  }
  return succs.subarray(succOff[i], succOff[i + 1]);
}
function predecessors(i) { return deps.subarray(depOff[i], depOff[i + 1]); }

/* ---------------------------------------------------------------- formatting */

function fmtNs(ns) {
  const a = Math.abs(ns);
  if (a < 1e3) return +ns.toFixed(a < 10 ? 3 : a < 100 ? 2 : 1) + ' ns';
  if (a < 1e6) return +(ns / 1e3).toFixed(3) + ' us';
  if (a < 1e9) return +(ns / 1e6).toFixed(3) + ' ms';
  return +(ns / 1e9).toFixed(3) + ' s';
}
function fmtBytes(b) {
  if (b < 1024) return b + ' B';
  if (b < 1048576) return +(b / 1024).toFixed(1) + ' KiB';
  if (b < 1073741824) return +(b / 1048576).toFixed(2) + ' MiB';
  return +(b / 1073741824).toFixed(2) + ' GiB';
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
function el(tag, cls, html) { const e = document.createElement(tag); if (cls) e.className = cls; if (html != null) e.innerHTML = html; return e; }
/* "func=exp dst=sbuf[..] src=.." -> one part per key=value */
function operandParts(s) { return s ? s.split(/ (?=[a-z0-9_]+=)/) : []; }

/* ---------------------------------------------------------------- colours */

const COLORS = {
  load: '#3f7fc1', store: '#59b4c9', LoadStationary: '#f08a8a', MultiplyMoving: '#d2403c', nc_matmul: '#d2403c',
  nc_transpose: '#f0962b', activation: '#4fa34a', tensor_tensor: '#a46fb0', tensor_scalar: '#c58fd0',
  tensor_reduce: '#7d5bc9', tensor_copy: '#d8b62f', memset: '#9aa3ad', iota: '#8c7d6e', affine_select: '#6e8c86',
};
/* An opcode without a colour of its own (DMA triggers, scans, bn_stats, ...)
 * gets one of its own too: hues a golden angle apart, so no two names in a
 * page share a colour. */
function extraColor(k) { return 'hsl(' + ((k * 137.508 + 20) % 360).toFixed(1) + ',45%,' + (k % 2 ? 62 : 48) + '%)'; }
const nameIdx = new Map(), names = [], palette = [];
let nextra = 0;
function colorIndex(name) {
  let k = nameIdx.get(name);
  if (k === undefined) {
    k = names.length; nameIdx.set(name, k); names.push(name);
    palette.push(COLORS[name] || extraColor(nextra++));
  }
  return k;
}
const evColor = new Uint8Array(NE);
for (let e = 0; e < NE; e++) evColor[e] = colorIndex(evName(e));
{
  const lg = $('legend');
  names.forEach((n, k) => lg.appendChild(el('span', null, '<i style="background:' + palette[k] + '"></i>' + esc(n))));
}

/* Coarse level of detail for large profiles: per row, busy time in NBIN equal
 * bins as prefix sums, and the colour of the event covering most of each bin.
 * A view where one pixel spans several bins draws from these in O(pixels). */
const NBIN = NE > 20000 ? 65536 : 0, binW = total / Math.max(1, NBIN);
const binColor = [], rowPre = [];
let rowPreMarked = null;
function binPrefix(filter) {
  const pre = [];
  for (let r = 0; r < NR; r++) {
    const busy = new Float64Array(NBIN + 1), best = filter ? null : new Float32Array(NBIN), col = filter ? null : new Uint8Array(NBIN);
    for (const e of rowEv[r]) {
      if (filter && !filter[evInstr[e]]) continue;
      const s = evStart[e], t = evEnd[e];
      const b0 = Math.min(NBIN - 1, Math.floor(s / binW)), b1 = Math.min(NBIN - 1, Math.floor(t / binW));
      for (let b = b0; b <= b1; b++) {
        const c = Math.min(t, (b + 1) * binW) - Math.max(s, b * binW);
        if (c <= 0) continue;
        busy[b + 1] += c;
        if (best && c > best[b]) { best[b] = c; col[b] = evColor[e]; }
      }
    }
    for (let b = 0; b < NBIN; b++) busy[b + 1] += busy[b];
    pre.push(busy);
    if (col) binColor.push(col);
  }
  return pre;
}
if (NBIN) rowPre.push(...binPrefix(null));

/* ---------------------------------------------------------------- layout */

const LABEL_W = 92, AXIS_H = 26, ROW_H = 20, LANE_H = 9, CROW_H = 36, PAD_R = 10;
const counters = (D.counters || []).filter((c) => c.t && c.t.length);
const canvas = $('tl'), ctx = canvas.getContext('2d'), wrap = $('tlwrap');
let W = 0, H = 0, dpr = 1;
const view = { t0: 0, t1: total };
function plotW() { return Math.max(10, W - LABEL_W - PAD_R); }
function X(t) { return LABEL_W + (t - view.t0) / (view.t1 - view.t0) * plotW(); }
function T(x) { return view.t0 + (x - LABEL_W) / plotW() * (view.t1 - view.t0); }
const rowTop = new Float64Array(NR + 1);
for (let r = 0; r < NR; r++) rowTop[r + 1] = rowTop[r] + ROW_H + (rowLanes[r] - 1) * LANE_H;
function rowY(r) { return AXIS_H + rowTop[r]; }
function rowH(r) { return rowTop[r + 1] - rowTop[r]; }
/* bar of event e: y and height inside its row */
function barY(e) { const r = evRow[e]; return rowY(r) + 3 + evLane[e] * (rowLanes[r] > 1 ? LANE_H : 0); }
function barH(e) { return rowLanes[evRow[e]] > 1 ? LANE_H - 2 : ROW_H - 6; }
function counterY(c) { return AXIS_H + rowTop[NR] + 6 + c * CROW_H; }
function resize() {
  dpr = window.devicePixelRatio || 1;
  W = wrap.clientWidth;
  H = AXIS_H + rowTop[NR] + 6 + counters.length * CROW_H + 8;
  canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
  canvas.style.width = W + 'px'; canvas.style.height = H + 'px';
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  draw();
}

/* first index k in idx with key(idx[k]) >= v */
function lowerBound(idx, key, v) {
  let lo = 0, hi = idx.length;
  while (lo < hi) { const m = (lo + hi) >>> 1; if (key[idx[m]] < v) lo = m + 1; else hi = m; }
  return lo;
}

/* ---------------------------------------------------------------- selection state */

let mark = null, markCount = 0;   /* instructions selected by search, source line or box */
let selInstr = -1;                /* clicked instruction */
let hoverEv = -1;
let box = null;                   /* {ta, tb, r0, r1} box selection */
let drag = null;                  /* {x0, y0, x1, y1, mode} */

/* ---------------------------------------------------------------- drawing */

let drawPending = false;
function requestDraw() { if (!drawPending) { drawPending = true; requestAnimationFrame(() => { drawPending = false; draw(); }); } }

function niceStep(span, px) {
  const raw = span / Math.max(1, px / 110), p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function drawAxis() {
  ctx.fillStyle = '#f3f5f8'; ctx.fillRect(0, 0, W, AXIS_H);
  ctx.strokeStyle = '#c9ced6'; ctx.beginPath(); ctx.moveTo(0, AXIS_H - 0.5); ctx.lineTo(W, AXIS_H - 0.5); ctx.stroke();
  const step = niceStep(view.t1 - view.t0, plotW());
  ctx.fillStyle = '#3d4756'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
  ctx.strokeStyle = '#eceff3';
  for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
    const x = Math.round(X(t)) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, AXIS_H); ctx.lineTo(x, H); ctx.stroke();
    ctx.fillText(fmtNs(t), x + 3, AXIS_H / 2);
    ctx.fillRect(x - 0.5, AXIS_H - 6, 1, 6);
  }
}

/* The kernel launch (start-up, tear-down): hatched grey behind the rows of its core */
const REGIONS = (D.regions || []).map((g) => ({ kind: g.region, core: g.core, start: g.start_ns, end: g.end_ns }));
function drawLaunchRegions() {
  for (const g of REGIONS) {
    const a = Math.max(LABEL_W, X(g.start)), b = Math.min(LABEL_W + plotW(), X(g.end));
    if (b <= a) continue;
    let y0 = AXIS_H, y1 = rowsBottom();
    if (ROWS.some((r) => r.core)) { /* SPMD: only its core's rows */
      let lo = -1, hi = -1;
      for (let r = 0; r < NR; r++) if (ROWS[r].core === g.core) { if (lo < 0) lo = r; hi = r; }
      if (lo < 0) continue;
      y0 = rowY(lo); y1 = rowY(hi) + rowH(hi);
    }
    ctx.fillStyle = 'rgba(120,128,140,.13)'; ctx.fillRect(a, y0, b - a, y1 - y0);
    ctx.strokeStyle = 'rgba(120,128,140,.35)';
    ctx.beginPath();
    for (let x = a - (y1 - y0); x < b; x += 8) { ctx.moveTo(Math.max(a, x), y0 + Math.max(0, a - x)); ctx.lineTo(Math.min(b, x + (y1 - y0)), y0 + Math.min(y1 - y0, b - x)); }
    ctx.save(); ctx.rect(a, y0, b - a, y1 - y0); ctx.clip(); ctx.stroke(); ctx.restore();
    ctx.fillStyle = '#5b6675'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'top';
    ctx.fillText('launch ' + g.kind, a + 3, y0 + 2, Math.max(0, b - a - 6));
  }
}
function rowsBottom() { return NR ? rowY(NR - 1) + rowH(NR - 1) : AXIS_H; }

/* Sequences: a band per kernel behind the rows, its name at the top */
const KERNEL_BAND = ['rgba(91,141,239,.07)', 'rgba(239,150,43,.08)'];
function drawKernelBands() {
  for (let k = 0; k < kernelSpans.length; k++) {
    const s = kernelSpans[k], a = Math.max(LABEL_W, X(s.t0)), b = Math.min(LABEL_W + plotW(), X(s.t1));
    if (b <= a) continue;
    ctx.fillStyle = KERNEL_BAND[k % 2]; ctx.fillRect(a, AXIS_H, b - a, H - AXIS_H);
    ctx.fillStyle = '#3d4756'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'top';
    ctx.fillText(s.name, a + 3, AXIS_H + 2, Math.max(0, b - a - 6));
  }
}

/* Level of detail: bars narrower than 2 px that touch are merged into one
 * run per lane, coloured by its longest member, shaded by how busy it is. */
const runs = [];
for (let k = 0; k < MAX_LANES; k++) runs.push({ a: -1, b: -1, c: 0, big: -1, busy: 0, m: 0, y: 0, h: 0 });
function flushRun(R) {
  if (R.a < 0) return;
  const w = Math.max(1, R.b - R.a);
  ctx.globalAlpha = (R.m ? 1 : 0.18) * Math.min(1, 0.45 + R.busy / w);
  ctx.fillStyle = palette[R.c];
  ctx.fillRect(R.a, R.y, w, R.h);
  R.a = -1;
}
/* One rectangle per run of pixels with the same colour and shade. */
function drawRowBinned(r, pre, alphaScale) {
  const pw = plotW(), span = view.t1 - view.t0, y = rowY(r) + 3, h = rowH(r) - 6, cols = binColor[r];
  let runX = -1, runC = -1, runA = -1, px = 0;
  const flush = () => {
    if (runX < 0) return;
    ctx.globalAlpha = runA * alphaScale; ctx.fillStyle = palette[runC];
    ctx.fillRect(LABEL_W + runX, y, px - runX, h);
    runX = -1;
  };
  for (; px < pw; px++) {
    const ta = view.t0 + px / pw * span, tb = ta + span / pw;
    const ba = Math.max(0, Math.min(NBIN, Math.floor(ta / binW))), bb = Math.max(0, Math.min(NBIN, Math.floor(tb / binW)));
    const busy = bb > ba ? pre[bb] - pre[ba] : 0;
    if (busy <= 0) { flush(); continue; }
    let c = cols[ba], m = -1;
    for (let b = ba; b < bb; b++) { const v = pre[b + 1] - pre[b]; if (v > m) { m = v; c = cols[b]; } }
    const a = Math.round(Math.min(1, 0.45 + busy / (tb - ta)) * 10) / 10;
    if (c !== runC || a !== runA) { flush(); runX = px; runC = c; runA = a; } else if (runX < 0) runX = px;
  }
  flush();
  ctx.globalAlpha = 1;
}

const LABEL_MIN_PX = 44; /* bars at least this wide carry their name */
let labelsDrawn = 0;
function drawRowBars(r, dim) {
  const idx = rowEv[r];
  if (!idx.length) return;
  if (NBIN && (view.t1 - view.t0) / plotW() >= 4 * binW) {
    if (!dim) { drawRowBinned(r, rowPre[r], 1); return; }
    if (!rowPreMarked) rowPreMarked = binPrefix(mark);
    drawRowBinned(r, rowPre[r], 0.18);
    drawRowBinned(r, rowPreMarked[r], 1);
    return;
  }
  let k = lowerBound(idx, evStart, view.t0 - rowMaxDur[r]);
  const x0p = LABEL_W, x1p = LABEL_W + plotW();
  for (; k < idx.length; k++) {
    const e = idx[k];
    if (evStart[e] > view.t1) break;
    if (evEnd[e] < view.t0) continue;
    let a = X(evStart[e]), b = X(evEnd[e]);
    if (a < x0p) a = x0p;
    if (b > x1p) b = x1p;
    const m = dim ? mark[evInstr[e]] : 1, R = runs[evLane[e]];
    if (b - a >= 2) {
      flushRun(R);
      const y = barY(e), h = barH(e);
      ctx.globalAlpha = m ? 1 : 0.18;
      ctx.fillStyle = palette[evColor[e]];
      ctx.fillRect(a, y, b - a, h);
      if (b - a >= 5 && m) { ctx.globalAlpha = 0.4; ctx.fillStyle = '#fff'; ctx.fillRect(b - 1, y, 1, h); }
      if (b - a >= LABEL_MIN_PX && h >= 9) { /* zoomed in: the bar's name inside it */
        ctx.globalAlpha = m ? 1 : 0.4; ctx.fillStyle = '#fff'; ctx.font = '10px system-ui, sans-serif';
        ctx.textBaseline = 'middle'; ctx.fillText(evName(e), a + 3, y + h / 2, b - a - 6);
        labelsDrawn++;
      }
      continue;
    }
    if (R.a >= 0 && a <= R.b + 1 && m === R.m) {
      if (b > R.b) R.b = b;
      R.busy += b - a;
      if (b - a > R.big) { R.big = b - a; R.c = evColor[e]; }
    } else {
      flushRun(R);
      R.a = a; R.b = b; R.busy = b - a; R.big = b - a; R.c = evColor[e]; R.m = m; R.y = barY(e); R.h = barH(e);
    }
  }
  for (const R of runs) flushRun(R);
  ctx.globalAlpha = 1;
}

function drawCounter(c, y) {
  const cn = counters[c], t = cn.t, v = cn.v;
  let vmax = 0;
  for (let i = 0; i < v.length; i++) if (v[i] > vmax) vmax = v[i];
  ctx.fillStyle = '#3d4756'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'top';
  ctx.fillText(cn.name.replace(/_/g, ' '), 4, y + 2, LABEL_W - 8);
  ctx.fillStyle = '#8a94a3';
  ctx.fillText('max ' + (cn.unit === 'bytes' ? fmtBytes(vmax) : +vmax.toPrecision(4) + ' ' + cn.unit), 4, y + 16, LABEL_W - 8);
  if (!(vmax > 0)) return;
  const h = CROW_H - 6, base = y + CROW_H - 3, x1p = LABEL_W + plotW();
  let lo = 0, hi = t.length;
  while (lo < hi) { const m = (lo + hi) >>> 1; if (t[m] <= view.t0) lo = m + 1; else hi = m; }
  let i = Math.max(0, lo - 1);
  /* one column per pixel: the largest value held in that pixel */
  ctx.fillStyle = 'rgba(63,127,193,.35)'; ctx.strokeStyle = '#3f7fc1';
  ctx.beginPath(); ctx.moveTo(LABEL_W, base);
  let px = -1, pv = 0;
  for (; i < t.length; i++) {
    const a = Math.max(LABEL_W, X(t[i]));
    const b = i + 1 < t.length ? Math.min(x1p, X(t[i + 1])) : x1p;
    if (a > x1p) break;
    const xa = Math.floor(a);
    const val = base - v[i] / vmax * h;
    if (xa === px) { if (val < pv) { pv = val; ctx.lineTo(xa, val); } } else { ctx.lineTo(xa, val); px = xa; pv = val; }
    if (b > xa + 1) ctx.lineTo(b, val);
  }
  ctx.lineTo(x1p, base); ctx.closePath(); ctx.fill(); ctx.stroke();
}

function outlineInstr(i, color, lw) {
  for (let e = iFirstEv[i]; e >= 0 && e < NE; e++) {
    if (evInstr[e] !== i) { if (evStart[e] > iEnd[i]) break; continue; }
    if (evEnd[e] < view.t0 || evStart[e] > view.t1) continue;
    const a = X(evStart[e]), b = X(evEnd[e]);
    ctx.strokeStyle = color; ctx.lineWidth = lw;
    ctx.strokeRect(Math.max(LABEL_W, a) - 1, barY(e) - 1, Math.max(2, Math.min(b, LABEL_W + plotW()) - Math.max(LABEL_W, a)) + 2, barH(e) + 2);
  }
  ctx.lineWidth = 1;
}

/* Time markers: M adds one at the mouse (or clicking the axis), Shift-M
 * removes the nearest; consecutive markers show the interval between them.
 * Markers and their notes are kept in the browser per profile (localStorage)
 * and can be saved to and loaded from a notes file beside the profile. */
const MARK_KEY = 'nklab-markers:' + D.kernel + ':' + D.target + ':' + D.created;
try { const n = JSON.parse(($('nk-notes') || {}).textContent || 'null'); if (n && n.format === 'nklab-notes') D.notes = n; } catch (e) { /* not notes */ }
let markers = [];
try { markers = JSON.parse(localStorage.getItem(MARK_KEY) || '[]').filter((m) => typeof m.t === 'number'); } catch (e) { markers = []; }
if (D.notes && Array.isArray(D.notes.markers) && !markers.length) markers = D.notes.markers.filter((m) => typeof m.t === 'number');
function saveMarkers() {
  markers.sort((a, b) => a.t - b.t);
  try { localStorage.setItem(MARK_KEY, JSON.stringify(markers)); } catch (e) { /* private mode: kept for this page */ }
  requestDraw();
}
function addMarker(t, note) { markers.push({ t, note: note || '' }); saveMarkers(); }
function removeMarkerNear(t) {
  if (!markers.length) return;
  let best = 0;
  for (let k = 1; k < markers.length; k++) if (Math.abs(markers[k].t - t) < Math.abs(markers[best].t - t)) best = k;
  markers.splice(best, 1);
  saveMarkers();
}
function drawMarkers() {
  ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
  for (let k = 0; k < markers.length; k++) {
    const m = markers[k], x = Math.round(X(m.t)) + 0.5;
    if (k > 0) { /* the interval from the previous marker, on the axis */
      const xp = X(markers[k - 1].t), mid = (Math.max(LABEL_W, xp) + Math.min(LABEL_W + plotW(), x)) / 2;
      if (x >= LABEL_W && xp <= LABEL_W + plotW()) {
        const txt = '\u0394 ' + fmtNs(m.t - markers[k - 1].t), w = ctx.measureText(txt).width + 8;
        ctx.fillStyle = 'rgba(176,42,55,.9)'; ctx.fillRect(mid - w / 2, 2, w, AXIS_H - 8);
        ctx.fillStyle = '#fff'; ctx.fillText(txt, mid - w / 2 + 4, AXIS_H / 2 - 1);
      }
    }
    if (x < LABEL_W || x > LABEL_W + plotW()) continue;
    ctx.strokeStyle = '#b02a37'; ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(x, AXIS_H); ctx.lineTo(x, H); ctx.stroke(); ctx.setLineDash([]);
    ctx.fillStyle = '#b02a37'; ctx.fillText('M' + (k + 1) + (m.note ? ' ' + m.note : ''), x + 3, AXIS_H + 8);
  }
}
function notesJson() { return JSON.stringify({ format: 'nklab-notes', version: 1, kernel: D.kernel, created: D.created, markers }, null, 1); }

/* A dependency arrow from the end of instruction a's last bar to the start of b's first */
let arrowsDrawn = 0;
function lastEv(i) { let best = -1; for (let e = iFirstEv[i]; e >= 0 && e < NE && evStart[e] <= iEnd[i]; e++) if (evInstr[e] === i) best = e; return best; }
function arrow(a, b, color) {
  const ea = lastEv(a), eb = iFirstEv[b];
  if (ea < 0 || eb < 0) return;
  const x0 = X(evEnd[ea]), y0 = barY(ea) + barH(ea) / 2, x1 = X(evStart[eb]), y1 = barY(eb) + barH(eb) / 2;
  if (Math.max(x0, x1) < LABEL_W || Math.min(x0, x1) > LABEL_W + plotW()) return;
  ctx.strokeStyle = color; ctx.fillStyle = color; ctx.lineWidth = 1.5;
  ctx.beginPath(); ctx.moveTo(x0, y0); ctx.bezierCurveTo((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, x1, y1); ctx.stroke();
  const dir = x1 >= x0 ? 1 : -1;
  ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x1 - 6 * dir, y1 - 3.5); ctx.lineTo(x1 - 6 * dir, y1 + 3.5); ctx.closePath(); ctx.fill();
  ctx.lineWidth = 1;
  arrowsDrawn++;
}

let lastDrawMs = 0;
function draw() {
  labelsDrawn = 0; arrowsDrawn = 0;
  const t = performance.now();
  ctx.clearRect(0, 0, W, H);
  drawAxis();
  for (let r = 0; r < NR; r++) {
    const y = rowY(r);
    ctx.fillStyle = r % 2 ? '#f7f8fa' : '#fff'; ctx.fillRect(0, y, W, rowH(r));
    drawRowBars(r, markCount > 0);
  }
  drawKernelBands();
  drawLaunchRegions();
  drawCompare();
  drawMarkers();
  ctx.fillStyle = '#f3f5f8'; ctx.fillRect(0, AXIS_H, LABEL_W, H - AXIS_H);
  ctx.font = '12px system-ui, sans-serif'; ctx.textBaseline = 'middle'; ctx.fillStyle = '#1d232b';
  for (let r = 0; r < NR; r++) ctx.fillText(ROWS[r].name, 6, rowY(r) + rowH(r) / 2);
  ctx.strokeStyle = '#c9ced6'; ctx.beginPath(); ctx.moveTo(LABEL_W - 0.5, AXIS_H); ctx.lineTo(LABEL_W - 0.5, H); ctx.stroke();
  /* SPMD: a heavier rule between the row groups of two NeuronCores */
  ctx.strokeStyle = '#5b6675';
  for (let r = 1; r < NR; r++)
    if (ROWS[r].core !== ROWS[r - 1].core) { const y = rowY(r) - 0.5; ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(W, y); ctx.stroke(); }
  for (let c = 0; c < counters.length; c++) drawCounter(c, counterY(c));
  if (selInstr >= 0) {
    for (const j of predecessors(selInstr)) { outlineInstr(j, '#f0962b', 2); arrow(j, selInstr, '#f0962b'); }
    for (const j of successors(selInstr)) { outlineInstr(j, '#2e9e5b', 2); arrow(selInstr, j, '#2e9e5b'); }
    outlineInstr(selInstr, '#111', 2.5);
  }
  if (hoverEv >= 0) outlineInstr(evInstr[hoverEv], 'rgba(0,0,0,.55)', 1);
  for (const [ra, rb] of insightRanges) {
    ctx.fillStyle = 'rgba(240,173,78,.18)';
    ctx.fillRect(Math.max(LABEL_W, X(ra)), AXIS_H, Math.max(2, X(rb) - Math.max(LABEL_W, X(ra))), H - AXIS_H);
  }
  if (box) {
    const a = X(box.ta), b = X(box.tb), y0 = rowY(box.r0), y1 = rowY(box.r1) + rowH(box.r1);
    ctx.fillStyle = 'rgba(31,95,174,.12)'; ctx.fillRect(a, y0, b - a, y1 - y0);
    ctx.strokeStyle = '#1f5fae'; ctx.setLineDash([4, 3]); ctx.strokeRect(a, y0, b - a, y1 - y0); ctx.setLineDash([]);
  }
  if (drag && drag.moved && drag.mode !== 'pan') {
    const a = Math.min(drag.x0, drag.x1), b = Math.max(drag.x0, drag.x1);
    if (drag.mode === 'zoom') {
      ctx.fillStyle = 'rgba(240,150,43,.15)'; ctx.fillRect(a, AXIS_H, b - a, H - AXIS_H);
      ctx.fillStyle = '#3d4756'; ctx.textBaseline = 'top';
      ctx.fillText(fmtNs(T(b) - T(a)), a + 4, AXIS_H + 2);
    } else {
      const y0 = Math.min(drag.y0, drag.y1), y1 = Math.max(drag.y0, drag.y1);
      ctx.strokeStyle = '#1f5fae'; ctx.strokeRect(a, y0, b - a, y1 - y0);
    }
  }
  lastDrawMs = performance.now() - t;
  api.draws++;
}

/* ---------------------------------------------------------------- hit testing */

function rowAt(y) {
  const v = y - AXIS_H;
  if (v < 0 || v >= rowTop[NR]) return -1;
  let r = 0;
  while (rowTop[r + 1] <= v) r++;
  return r;
}

/* The event under (x, y): one containing the time, else the nearest within 3 px. */
function eventAt(x, y) {
  const r = rowAt(y);
  if (r < 0 || x < LABEL_W) return -1;
  const t = T(x), tol = 3 * (view.t1 - view.t0) / plotW(), idx = rowEv[r];
  const lane = rowLanes[r] > 1 ? Math.max(0, Math.min(rowLanes[r] - 1, Math.floor((y - rowY(r) - 3) / LANE_H))) : -1;
  let k = lowerBound(idx, evStart, t - tol - rowMaxDur[r]);
  let best = -1, bestD = Infinity;
  for (; k < idx.length; k++) {
    const e = idx[k];
    if (evStart[e] > t + tol) break;
    if (lane >= 0 && evLane[e] !== lane) continue;
    const d = t < evStart[e] ? evStart[e] - t : t > evEnd[e] ? t - evEnd[e] : 0;
    if (d < bestD || (d === 0 && bestD === 0 && evEnd[e] - evStart[e] < evEnd[best] - evStart[best])) { bestD = d; best = e; }
  }
  return bestD <= tol ? best : -1;
}

/* ---------------------------------------------------------------- tooltip and details */

const tip = $('tip');
function showTip(e, mx, my) {
  const i = evInstr[e];
  tip.innerHTML = '<div class="op">' + esc(evName(e)) + '</div>' +
    '<div>' + esc(ROWS[evRow[e]].name) + ' &#xB7; instruction ' + i + '</div>' +
    '<div class="opnd">' + operandParts(operands(i)).map(esc).join('<br>') + '</div>' +
    '<div>start ' + fmtNs(evStart[e]) + ' &#xB7; duration ' + fmtNs(evEnd[e] - evStart[e]) + '</div>' +
    dmaTip(i) +
    '<div class="loc">' + esc(locText(i)) + '</div>' + (loweredFrom(i) ? '<div class="hint">lowered from ' + esc(loweredFrom(i)) + '</div>' : '');
  tip.hidden = false;
  const ww = wrap.clientWidth, tw = tip.offsetWidth;
  tip.style.left = Math.min(mx + 14, ww - tw - 4) + 'px';
  tip.style.top = (my + 16 + wrap.scrollTop) + 'px';
}
function hideTip() { tip.hidden = true; }
/* The construct the kernel wrote that was lowered to instruction i ("nl.broadcast_to"), or '' */
function loweredFrom(i) {
  const c = D.instr.lowered ? D.instr.lowered[i] : 0;
  return c && D.calls ? D.calls[c - 1] || '' : '';
}
/* A DMA's bytes, its rate from issue to completion, its queue and DMA engines */
function dmaTip(i) {
  if (D.engines[iEngine[i]] !== 'dma') return '';
  const d = iEnd[i] - iStart[i], ne = D.instr.dma_engines ? D.instr.dma_engines[i] : 0, e0 = ne ? D.instr.dma_engine[i] : 0;
  return '<div class="dma">' + fmtBytes(iBytes[i]) + (d > 0 ? ' at ' + (iBytes[i] / d).toFixed(1) + ' GB/s' : '') +
    ' &#xB7; queue ' + iQueue[i] + (ne ? ' &#xB7; DMA engine' + (ne > 1 ? 's ' + e0 + '..' + (e0 + ne - 1) + ' (' + ne + ')' : ' ' + e0) : '') + '</div>';
}

function instrLink(j) {
  return '<a class="jump" data-instr="' + j + '">#' + j + ' ' + esc(opName(j)) + '</a> <span class="hint">' +
    esc(locText(j)) + ' &#xB7; ' + fmtNs(iStart[j]) + '</span>';
}
function depList(list) {
  if (!list.length) return '<div class="hint">none</div>';
  let h = '';
  const n = Math.min(list.length, 50);
  for (let k = 0; k < n; k++) h += '<div>' + instrLink(list[k]) + '</div>';
  if (list.length > n) h += '<div class="hint">and ' + (list.length - n) + ' more</div>';
  return h;
}

function selectInstr(i, reveal) {
  selInstr = i;
  const det = $('details');
  if (i < 0) { det.innerHTML = '<p class="hint">Nothing selected.</p>'; requestDraw(); return; }
  const l = locOf(i);
  let evs = '';
  for (let e = iFirstEv[i]; e >= 0 && e < NE && evStart[e] <= iEnd[i]; e++)
    if (evInstr[e] === i) evs += '<div>' + esc(evName(e)) + ' on ' + esc(ROWS[evRow[e]].name) + ': ' + fmtNs(evStart[e]) + ' + ' + fmtNs(evEnd[e] - evStart[e]) + '</div>';
  det.innerHTML = '<h3>#' + i + ' ' + esc(opName(i)) + '</h3>' +
    '<h4>Timing</h4><div class="kv"><span>start</span><span>' + fmtNs(iStart[i]) + '</span><span>end</span><span>' + fmtNs(iEnd[i]) +
    '</span><span>duration</span><span>' + fmtNs(iEnd[i] - iStart[i]) + '</span></div>' + evs +
    '<h4>Ids</h4><div class="kv"><span>instruction</span><span>' + i + '</span><span>engine</span><span>' + esc(D.engines[iEngine[i]] || '?') +
    (D.engines[iEngine[i]] === 'dma' ? '</span><span>queue</span><span>' + iQueue[i] : '') +
    (D.instr.core && ROWS.some((r) => r.core) ? '</span><span>core / instance</span><span>NC' + D.instr.core[i] + ' / ' + D.instr.inst[i] : '') +
    (D.instr.seg && D.kernels && D.kernels.length > 1 ? '</span><span>kernel</span><span>' + esc(D.kernels[D.instr.seg[i]]) : '') +
    '</span><span>bytes</span><span>' + fmtBytes(iBytes[i]) + '</span></div>' +
    '<h4>Operands</h4><div class="mono">' + operandParts(operands(i)).map(esc).join('<br>') + '</div>' +
    '<h4>Source</h4><a class="jump" data-line="' + i + '">' + esc(l.path + ':' + l.line) + '</a>' +
    (loweredFrom(i) ? '<div class="lowered">' + esc(opName(i)) + ' (lowered from ' + esc(loweredFrom(i)) + ' at line ' + l.line + ')</div>' : '') +
    loopInfo(i) + compareInfo(i) +
    '<h4>Predecessors (waits for)</h4>' + depList(predecessors(i)) +
    '<h4>Successors (wait for it)</h4>' + depList(successors(i));
  showSourceLine(l.file, l.line, true);
  if (reveal && (iEnd[i] < view.t0 || iStart[i] > view.t1)) {
    const span = view.t1 - view.t0, mid = (iStart[i] + iEnd[i]) / 2;
    setView(mid - span / 2, mid + span / 2);
  }
  requestDraw();
}

/* Loops: the selected instruction's iteration, and links that mark its
 * siblings (the same line in every iteration of the same source loop) or
 * everything of its iteration */
const LOOPS = D.loops || { loc: [], trip: [] };
function loopOf(i) { const l = D.instr.loop ? D.instr.loop[i] : 0; return l > 0 && l <= LOOPS.loc.length ? l - 1 : -1; }
function siblings(i) {
  const li = loopOf(i), out = [];
  if (li < 0) return out;
  const lloc = LOOPS.loc[li];
  for (let j = 0; j < NI; j++) { const lj = loopOf(j); if (iLoc[j] === iLoc[i] && lj >= 0 && LOOPS.loc[lj] === lloc) out.push(j); }
  return out;
}
function iteration(i) {
  const li = loopOf(i), out = [];
  if (li < 0) return out;
  for (let j = 0; j < NI; j++) if (D.instr.loop[j] === li + 1 && D.instr.iter[j] === D.instr.iter[i]) out.push(j);
  return out;
}
function loopInfo(i) {
  const li = loopOf(i);
  if (li < 0) return '';
  const l = LOOPS.loc[li], line = l >= 0 && l < locLine.length ? locLine[l] : '?';
  return '<h4>Loop</h4><div>iteration ' + D.instr.iter[i] + ' of ' + LOOPS.trip[li] + ' of the loop at line ' + line +
    ' &#xB7; <a class="jump" data-siblings="' + i + '">mark its ' + siblings(i).length + ' siblings</a> &#xB7; ' +
    '<a class="jump" data-iteration="' + i + '">mark this iteration (' + iteration(i).length + ')</a></div>';
}
document.addEventListener('click', (ev) => {
  const s = ev.target.closest('[data-siblings]'), t = ev.target.closest('[data-iteration]');
  if (s) { const i = +s.dataset.siblings; setMarks(siblings(i), 'Siblings of #' + i + ': ' + locText(i) + ', every iteration'); }
  else if (t) { const i = +t.dataset.iteration; setMarks(iteration(i), 'Iteration ' + D.instr.iter[i] + ' of #' + i + "'s loop"); }
});

/* ---------------------------------------------------------------- marking (search, lines, box) */

function setMarks(list, title, extra) {
  rowPreMarked = null;
  mark = new Uint8Array(NI);
  for (const i of list) mark[i] = 1;
  markCount = list.length;
  renderMatches(list, title, extra);
  requestDraw();
}
function clearMarks() {
  mark = null; markCount = 0; rowPreMarked = null; $('matches').innerHTML = ''; box = null; insightRanges = [];
  document.querySelectorAll('#srcbody .hit').forEach((n) => n.classList.remove('hit'));
  requestDraw();
}

/* Summary of a set of instructions: durations, opcode breakdown, bytes, lines. */
function summarize(list) {
  let first = Infinity, last = -Infinity, busy = 0, bytes = 0;
  const byOp = new Map(), byLine = new Map();
  for (const i of list) {
    if (iStart[i] < first) first = iStart[i];
    if (iEnd[i] > last) last = iEnd[i];
    const d = iEnd[i] - iStart[i];
    busy += d; bytes += iBytes[i];
    const o = byOp.get(opName(i)) || { n: 0, t: 0 };
    o.n++; o.t += d; byOp.set(opName(i), o);
    const lt = locText(i);
    byLine.set(lt, (byLine.get(lt) || 0) + 1);
  }
  return { first, last, busy, bytes, byOp, byLine };
}

function renderMatches(list, title, extra) {
  const box = $('matches'), s = summarize(list);
  let h = '<h3 id="match-count" data-count="' + list.length + '">' + esc(title) + ': ' + list.length + ' instruction' + (list.length === 1 ? '' : 's') + '</h3>';
  if (list.length) {
    h += '<div class="kv">' + (extra || '') +
      '<span>first start</span><span>' + fmtNs(s.first) + '</span><span>last end</span><span>' + fmtNs(s.last) +
      '</span><span>span</span><span>' + fmtNs(s.last - s.first) + '</span><span>busy (sum)</span><span>' + fmtNs(s.busy) +
      '</span><span>bytes</span><span>' + fmtBytes(s.bytes) + '</span></div>';
    h += '<h4>Opcodes</h4><table><tr><th>opcode</th><th class="num">count</th><th class="num">time</th></tr>';
    for (const [k, v] of [...s.byOp.entries()].sort((a, b) => b[1].t - a[1].t))
      h += '<tr><td>' + esc(k) + '</td><td class="num">' + v.n + '</td><td class="num">' + fmtNs(v.t) + '</td></tr>';
    h += '</table><h4>Source lines</h4><table>';
    for (const [k, v] of [...s.byLine.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10))
      h += '<tr><td>' + esc(k) + '</td><td class="num">' + v + '</td></tr>';
    h += '</table><h4>Matches</h4><table id="match-list"><tr><th>#</th><th>opcode</th><th class="num">start</th><th class="num">duration</th><th>line</th></tr>';
    const n = Math.min(list.length, 200);
    for (let k = 0; k < n; k++) {
      const i = list[k];
      h += '<tr class="m" data-instr="' + i + '"><td>' + i + '</td><td>' + esc(opName(i)) + '</td><td class="num">' + fmtNs(iStart[i]) +
        '</td><td class="num">' + fmtNs(iEnd[i] - iStart[i]) + '</td><td>' + esc(locText(i)) + '</td></tr>';
    }
    h += '</table>';
    if (list.length > n) h += '<div class="hint">first ' + n + ' shown</div>';
  }
  box.innerHTML = h;
}

function instrsOfLine(fileQuery, line) {
  const q = fileQuery.trim(), want = new Uint8Array(locLine.length);
  for (let l = 0; l < locLine.length; l++) {
    if (locLine[l] !== line) continue;
    const f = files[locFile[l]];
    if (!f) continue;
    if (q === '' || f.path === q || f.base === q || f.path.endsWith('/' + q)) want[l] = 1;
  }
  const out = [];
  for (let i = 0; i < NI; i++) if (iLoc[i] >= 0 && want[iLoc[i]]) out.push(i);
  return out;
}

/* Instructions whose opcode or operands match: each operand string is tested once. */
function instrsMatching(test) {
  const sHit = tplParts.map((p) => p.length > 1 ? 2 : test(p[0]) ? 1 : 0); /* 2: test per instruction */
  const opHit = D.ops.map((s) => test(s));
  const mmHit = test('LoadStationary') || test('MultiplyMoving');
  const out = [];
  for (let i = 0; i < NI; i++) {
    const h = sHit[iOpnd[i]];
    if (h === 1 || opHit[iOp[i]] || (mmHit && D.ops[iOp[i]] === 'nc_matmul') || (h === 2 && test(operands(i)))) out.push(i);
  }
  return out;
}

function runSearch(q) {
  const input = $('search');
  input.classList.remove('bad');
  q = q.trim();
  if (!q) { clearMarks(); return; }
  let list, m;
  if ((m = /^\/(.*)\/([imsu]*)$/.exec(q))) {
    let re;
    try { re = new RegExp(m[1], m[2]); } catch (err) { input.classList.add('bad'); input.title = String(err.message); return; }
    list = instrsMatching((s) => re.test(s));
  } else if ((m = /^(.*):(\d+)$/.exec(q))) {
    list = instrsOfLine(m[1], +m[2]);
    showSourceMatch(m[1], +m[2]);
  } else {
    const low = q.toLowerCase();
    list = instrsMatching((s) => s.toLowerCase().includes(low));
  }
  box = null;
  setMarks(list, 'Search ' + q);
}

/* ---------------------------------------------------------------- box selection */

function boxSelect(ta, tb, r0, r1) {
  box = { ta, tb, r0, r1 };
  const seen = new Uint8Array(NI), list = [];
  let busy = 0;
  for (let r = r0; r <= r1; r++) {
    const idx = rowEv[r];
    for (let k = lowerBound(idx, evStart, ta - rowMaxDur[r]); k < idx.length; k++) {
      const e = idx[k];
      if (evStart[e] > tb) break;
      if (evEnd[e] < ta) continue;
      busy += Math.min(tb, evEnd[e]) - Math.max(ta, evStart[e]);
      const i = evInstr[e];
      if (!seen[i]) { seen[i] = 1; list.push(i); }
    }
  }
  list.sort((a, b) => iStart[a] - iStart[b]);
  setMarks(list, 'Box ' + fmtNs(ta) + ' to ' + fmtNs(tb),
    '<span>box duration</span><span>' + fmtNs(tb - ta) + '</span><span>rows</span><span>' +
    esc(ROWS[r0].name) + (r1 > r0 ? ' to ' + esc(ROWS[r1].name) : '') + '</span><span>busy in box</span><span>' + fmtNs(busy) + '</span>');
}

/* ---------------------------------------------------------------- view changes */

function setView(a, b) {
  const minSpan = Math.max(1e-3, total * 1e-9), pad = total * 0.05;
  if (b - a < minSpan) { const m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
  if (b - a > total + 2 * pad) { a = -pad; b = total + pad; }
  if (a < -pad) { b += -pad - a; a = -pad; }
  if (b > total + pad) { a -= b - total - pad; b = total + pad; }
  view.t0 = a; view.t1 = b;
  requestDraw();
}
function zoomAt(t, f) { setView(t - (t - view.t0) * f, t + (view.t1 - t) * f); }
function pan(frac) { const d = (view.t1 - view.t0) * frac; setView(view.t0 + d, view.t1 + d); }
function resetView() { setView(0, total); }

/* ---------------------------------------------------------------- mouse and keys */

function localXY(ev) { const b = canvas.getBoundingClientRect(); return [ev.clientX - b.left, ev.clientY - b.top]; }

canvas.addEventListener('wheel', (ev) => {
  ev.preventDefault();
  const [x] = localXY(ev);
  if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) { pan((ev.deltaX || ev.deltaY) / plotW()); return; }
  zoomAt(T(Math.max(LABEL_W, x)), Math.exp(ev.deltaY * 0.0015));
}, { passive: false });

let mouseT = NaN;
canvas.addEventListener('mousedown', (ev) => {
  const [x, y] = localXY(ev);
  if (y < AXIS_H && x >= LABEL_W && ev.button === 0) { addMarker(T(x)); ev.preventDefault(); return; } /* the axis: a marker */
  const mode = ev.button === 1 || ev.altKey || ev.ctrlKey || ev.metaKey ? 'pan' : ev.shiftKey ? 'box' : 'zoom';
  drag = { x0: x, y0: y, x1: x, y1: y, mode, moved: false, v0: view.t0, v1: view.t1 };
  ev.preventDefault();
});
window.addEventListener('mousemove', (ev) => {
  const [x, y] = localXY(ev);
  if (drag) {
    drag.x1 = x; drag.y1 = y;
    if (Math.abs(x - drag.x0) > 3 || Math.abs(y - drag.y0) > 3) drag.moved = true;
    if (drag.mode === 'pan') {
      const dt = (x - drag.x0) / plotW() * (drag.v1 - drag.v0);
      setView(drag.v0 - dt, drag.v1 - dt);
    } else requestDraw();
    hideTip();
    return;
  }
  if (ev.target !== canvas) { if (hoverEv >= 0) { hoverEv = -1; hideTip(); requestDraw(); } return; }
  if (x >= LABEL_W) mouseT = T(x);
  const e = eventAt(x, y);
  if (e !== hoverEv) { hoverEv = e; requestDraw(); }
  if (e >= 0) showTip(e, x, y); else hideTip();
});
window.addEventListener('mouseup', (ev) => {
  if (!drag) return;
  const d = drag; drag = null;
  const [x, y] = localXY(ev);
  if (!d.moved) {
    if (d.mode !== 'pan') { const e = eventAt(x, y); selectInstr(e >= 0 ? evInstr[e] : -1, false); }
    requestDraw();
    return;
  }
  const a = Math.max(LABEL_W, Math.min(d.x0, x)), b = Math.max(d.x0, x);
  if (d.mode === 'zoom' && b - a > 3) setView(T(a), T(b));
  else if (d.mode === 'box') {
    let r0 = rowAt(Math.min(d.y0, y)), r1 = rowAt(Math.max(d.y0, y));
    if (r0 < 0) r0 = 0;
    if (r1 < 0) r1 = NR - 1;
    boxSelect(T(a), T(b), r0, r1);
  }
  requestDraw();
});
canvas.addEventListener('mouseleave', () => { if (!drag) { hoverEv = -1; hideTip(); requestDraw(); } });

document.addEventListener('keydown', (ev) => {
  if (ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT')) return;
  const k = ev.key;
  if (k === 'w' || k === 'W' || k === '+' || k === '=') zoomAt((view.t0 + view.t1) / 2, 0.7);
  else if (k === 's' || k === 'S' || k === '-') zoomAt((view.t0 + view.t1) / 2, 1 / 0.7);
  else if (k === 'a' || k === 'A' || k === 'ArrowLeft') pan(-0.2);
  else if (k === 'd' || k === 'D' || k === 'ArrowRight') pan(0.2);
  else if (k === '0' || k === 'Home') resetView();
  else if (k === 'Escape') { clearMarks(); selectInstr(-1); $('search').value = ''; }
  else if (k === 'm' && !isNaN(mouseT)) addMarker(mouseT);
  else if (k === 'M' && !isNaN(mouseT)) removeMarkerNear(mouseT);
  else return;
  ev.preventDefault();
});

$('zoom-in').onclick = () => zoomAt((view.t0 + view.t1) / 2, 0.5);
$('zoom-out').onclick = () => zoomAt((view.t0 + view.t1) / 2, 2);
$('zoom-reset').onclick = resetView;
$('notes-save').onclick = () => { /* a download: put it beside the profile as PROFILE.notes.json */
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([notesJson()], { type: 'application/json' }));
  a.download = (D.kernel || 'profile') + '.notes.json';
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
};
$('search').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') runSearch(ev.target.value); });
$('search').addEventListener('search', (ev) => { if (!ev.target.value) clearMarks(); });

document.addEventListener('click', (ev) => {
  const a = ev.target.closest('[data-instr]');
  if (a) { selectInstr(+a.dataset.instr, true); return; }
  const l = ev.target.closest('[data-line]');
  if (l) { const i = +l.dataset.line, o = locOf(i); showSourceLine(o.file, o.line, true); }
});

/* ---------------------------------------------------------------- source pane */

const lineStats = files.map(() => new Map()); /* line -> {n, t} */
for (let i = 0; i < NI; i++) {
  const l = iLoc[i];
  if (l < 0 || l >= locLine.length || !lineStats[locFile[l]]) continue;
  const m = lineStats[locFile[l]], s = m.get(locLine[l]) || { n: 0, t: 0 };
  s.n++; s.t += iEnd[i] - iStart[i];
  m.set(locLine[l], s);
}
let curFile = -1;
const fileSel = $('file');
files.forEach((f, k) => {
  const o = el('option'); o.value = k; o.textContent = f.path + (lineStats[k].size ? '' : ' (no instructions)');
  fileSel.appendChild(o);
});
fileSel.onchange = () => renderSource(+fileSel.value);

function renderSource(f) {
  curFile = f;
  fileSel.value = f;
  const body = $('srcbody');
  body.innerHTML = '';
  if (f < 0 || !files[f]) return;
  const st = lineStats[f];
  if (files[f].text == null) { body.appendChild(el('div', 'hint', 'The source of this file was not captured.')); $('srcinfo').textContent = ''; return; }
  const lines = files[f].text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const frag = document.createDocumentFragment();
  lines.forEach((text, k) => {
    const n = k + 1, s = st.get(n), row = el('div', 'ln' + (s ? ' has' : ''));
    row.dataset.src = n;
    row.innerHTML = '<span class="no">' + n + '</span><span class="cnt">' + (s ? s.n : '') + '</span><span class="tm">' +
      (s ? fmtNs(s.t) : '') + '</span><span class="code">' + esc(text) + '</span>';
    frag.appendChild(row);
  });
  body.appendChild(frag);
  let n = 0;
  st.forEach((v) => { n += v.n; });
  $('srcinfo').textContent = n + ' instructions from ' + st.size + ' lines';
  let cols = 0; /* the longest line, tabs to the next multiple of 8 as white-space: pre draws them */
  for (const text of lines) {
    let c = 0;
    for (let k = 0; k < text.length; k++) c = text.charCodeAt(k) === 9 ? (c + 8) & ~7 : c + 1;
    if (c > cols) cols = c;
  }
  fitSource(cols);
}

/* The source pane as wide as its longest line (gutter included), between
 * 260 px and SRC_MAX_FRAC of the window; the timeline takes the rest. */
let srcCols = 0;
const SRC_MAX_FRAC = 0.42; /* at most this share of the window: the timeline keeps the rest */
function fitSource(cols) {
  if (cols !== undefined) srcCols = cols;
  const body = $('srcbody'), row = body.querySelector('.ln'), pane = $('source');
  if (!row) return;
  const probe = el('span', null, 'MMMMMMMMMMMMMMMMMMMM');
  probe.style.cssText = 'position:absolute;visibility:hidden';
  body.appendChild(probe);
  const cw = probe.getBoundingClientRect().width / 20;
  probe.remove();
  const gutter = row.querySelector('.code').getBoundingClientRect().left - row.getBoundingClientRect().left;
  const cap = Math.max(260, Math.floor(window.innerWidth * SRC_MAX_FRAC));
  const want = Math.ceil(gutter + srcCols * cw + 24); /* + the scroll bar and the border */
  pane.style.maxWidth = cap + 'px';
  pane.style.width = Math.max(260, Math.min(cap, want)) + 'px';
  if (W) resize();
}

/* Scroll the source pane so line sits near its top. */
function scrollSourceTo(line) {
  const body = $('srcbody'), r = lineEl(line), first = body.querySelector('.ln');
  if (r && first) body.scrollTop = r.offsetTop - first.offsetTop;
}

function lineEl(line) { return $('srcbody').querySelector('.ln[data-src="' + line + '"]'); }
function showSourceLine(f, line, cur) {
  if (f < 0) return;
  if (f !== curFile) renderSource(f);
  document.querySelectorAll('#srcbody .cur').forEach((n) => n.classList.remove('cur'));
  const r = lineEl(line);
  if (r) { if (cur) r.classList.add('cur'); r.scrollIntoView({ block: 'center' }); }
}
function showSourceMatch(fq, line) {
  const q = fq.trim();
  const f = files.findIndex((x) => q === '' ? lineStats[files.indexOf(x)].has(line) : x.path === q || x.base === q || x.path.endsWith('/' + q));
  if (f < 0) return;
  if (f !== curFile) renderSource(f);
  document.querySelectorAll('#srcbody .hit').forEach((n) => n.classList.remove('hit'));
  const r = lineEl(line);
  if (r) { r.classList.add('hit'); r.scrollIntoView({ block: 'center' }); }
}

$('srcbody').addEventListener('click', (ev) => {
  const r = ev.target.closest('.ln');
  if (!r) return;
  const q = files[curFile].path + ':' + r.dataset.src;
  $('search').value = q;
  runSearch(q);
});

/* ---------------------------------------------------------------- summary and insights */

const METRIC_LABELS = { total_time: 'total time (device)', instruction_count: 'instructions' };
function fmtMetric(unit, v) {
  if (typeof v !== 'number') return esc(String(v));
  if (unit === 's') return fmtNs(v * 1e9);
  if (unit === '%') return v.toFixed(1) + ' %';
  if (unit === 'bytes') return fmtBytes(v) + (v >= 1024 ? ' (' + Math.round(v) + ')' : '');
  if (unit === 'FLOP') return v >= 1e6 ? (v / 1e9).toPrecision(4) + ' GFLOP' : String(v);
  if (unit === 'FLOP/byte') return v.toPrecision(4) + ' FLOP/B';
  return String(+v.toPrecision(6));
}
function renderSummary() {
  const S = D.summary || {}, sec = $('tab-summary');
  let h = '<h2>' + esc(D.kernel) + ' <small>on ' + esc(D.target) + ', nklab ' + esc(D.nklab) + '</small></h2><div class="metrics">';
  const units = S.units || {};
  h += '<div><span>host to device (inputs)</span><span>' + fmtNs(D.host_in_ns) + '</span></div>' +
    '<div><span>device to host (outputs)</span><span>' + fmtNs(D.host_out_ns) + '</span></div>';
  for (const [k, v] of Object.entries(S)) {
    if (k === 'opcodes' || k === 'units') continue;
    h += '<div><span>' + esc(METRIC_LABELS[k] || k.replace(/_/g, ' ')) + '</span><span data-metric="' + esc(k) + '">' + fmtMetric(units[k], v) + '</span></div>';
  }
  h += '</div><h3>Opcodes</h3><table id="optable"><thead><tr>' +
    '<th class="sortable" data-k="opcode">opcode</th><th class="sortable num" data-k="count">count</th>' +
    '<th class="sortable num desc" data-k="total_ns">total</th><th class="sortable num" data-k="average_ns">average</th>' +
    '<th class="num">share of events</th></tr></thead><tbody></tbody></table>';
  sec.innerHTML = h;
  const ops = (S.opcodes || []).slice();
  let sum = 0;
  for (const o of ops) sum += o.total_ns;
  let key = 'total_ns', dir = -1;
  const fill = () => {
    ops.sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0) * dir);
    sec.querySelector('tbody').innerHTML = ops.map((o) => '<tr><td><span class="swatch" style="background:' + (nameIdx.has(o.opcode) ? palette[nameIdx.get(o.opcode)] : (COLORS[o.opcode] || '#888')) + '"></span>' +
      esc(o.opcode) + '</td><td class="num">' + o.count + '</td><td class="num">' + fmtNs(o.total_ns) + '</td><td class="num">' +
      fmtNs(o.average_ns) + '</td><td class="num">' + (sum > 0 ? (100 * o.total_ns / sum).toFixed(1) : '0.0') + ' %</td></tr>').join('');
    sec.querySelectorAll('th.sortable').forEach((th) => { th.classList.remove('asc', 'desc'); if (th.dataset.k === key) th.classList.add(dir > 0 ? 'asc' : 'desc'); });
  };
  sec.querySelectorAll('th.sortable').forEach((th) => th.onclick = () => {
    if (key === th.dataset.k) dir = -dir; else { key = th.dataset.k; dir = key === 'opcode' ? 1 : -1; }
    fill();
  });
  fill();
}

/* Insights: the findings the profile carries, either an array or
 * {analysis, findings}. Each: title, detail, suggestion, severity, evidence,
 * lines [{file, line, instructions, busy_ns}], ranges [[start, end] ns],
 * instrs [instruction indices]. */
let insightRanges = [];
function renderInsights() {
  const sec = $('tab-insights'), ins = D.insights;
  const list = Array.isArray(ins) ? ins : (ins && ins.findings) || [];
  if (!list.length) { sec.innerHTML = '<h2>Insights</h2><p class="hint">No insights recorded in this profile.</p>'; return; }
  sec.innerHTML = '<h2>Insights</h2>' + list.map((it, k) => {
    const lines = (it.lines || []).map((l) => {
      const base = String(l.file || '').split('/').pop() + ':' + l.line;
      return '<a class="lnk" data-search="' + esc(base) + '">' + esc(base) + '</a>' + (l.instructions ? ' <span class="hint">(' + l.instructions + ')</span>' : '');
    }).join(' &#xB7; ');
    const ev = Object.entries(it.evidence || {}).map(([n, v]) => esc(n.replace(/_/g, ' ')) + ' ' + esc(+(+v).toPrecision(4))).join(', ');
    return '<div class="insight sev-' + esc(it.severity || '') + '"><b>' + esc(it.title || it.rule || '') + '</b>' +
      (it.severity ? ' <span class="hint">' + esc(it.severity) + '</span>' : '') +
      '<div>' + esc(it.detail || '') + '</div>' + (it.suggestion ? '<div><i>' + esc(it.suggestion) + '</i></div>' : '') +
      (ev ? '<div class="hint">' + ev + '</div>' : '') + (lines ? '<div>' + lines + '</div>' : '') +
      (it.lowered || []).map((w) => '<div class="lowered">not written: ' + esc(w.text) + '</div>').join('') +
      ((it.ranges && it.ranges.length) || (it.instrs && it.instrs.length) ? '<div><a class="lnk" data-finding="' + k + '">show on the timeline</a></div>' : '') + '</div>';
  }).join('');
  sec.querySelectorAll('[data-search]').forEach((a) => a.onclick = () => { showTab('timeline'); $('search').value = a.dataset.search; runSearch(a.dataset.search); });
  sec.querySelectorAll('[data-finding]').forEach((a) => a.onclick = () => {
    const it = list[+a.dataset.finding];
    showTab('timeline');
    insightRanges = it.ranges || [];
    if (it.instrs && it.instrs.length) setMarks(it.instrs.filter((i) => i >= 0 && i < NI), it.title || 'Finding');
    if (insightRanges.length) {
      let lo = Infinity, hi = -Infinity;
      for (const [x, y] of insightRanges) { lo = Math.min(lo, x); hi = Math.max(hi, y); }
      const pad = (hi - lo) * 0.05 + 1;
      setView(lo - pad, hi + pad);
    }
    requestDraw();
  });
}

/* ---------------------------------------------------------------- memory view */

/* SBUF and PSUM over time: each tile a rectangle from its first use to its
 * last (x, the timeline's time axis and zoom) over its bytes within a
 * partition (y, address); reloaded spills hatched red. One memory (and core)
 * at a time. */
const TL = D.tiles || { mem: [], core: [], parts: [], addr: [], bytes: [], loc: [], spill: [], t0: [], t1: [] };
const NT = TL.mem.length;
const memCanvas = $('mem'), memCtx = memCanvas.getContext('2d');
let memSel = 0, memRects = [];
{
  const sel = $('memsel'), seen = new Set();
  for (let k = 0; k < NT; k++) seen.add(TL.core[k] * 2 + TL.mem[k]);
  const keys = Array.from(seen).sort((a, b) => a - b);
  if (!keys.length) keys.push(0);
  for (const key of keys) {
    const o = document.createElement('option');
    o.value = key;
    o.textContent = (key & 1 ? 'PSUM' : 'SBUF') + (keys.some((x) => x >> 1) ? ' NC' + (key >> 1) : '');
    sel.appendChild(o);
  }
  memSel = keys[0];
  sel.onchange = () => { memSel = +sel.value; drawMemory(); };
}
function drawMemory() {
  const wrap = $('memwrap'), dpr = window.devicePixelRatio || 1;
  const w = wrap.clientWidth, h = wrap.clientHeight;
  if (!w || !h) return;
  memCanvas.width = w * dpr; memCanvas.height = h * dpr; memCanvas.style.width = w + 'px'; memCanvas.style.height = h + 'px';
  memCtx.setTransform(dpr, 0, 0, dpr, 0, 0);
  memCtx.clearRect(0, 0, w, h);
  const full = memSel & 1 ? TL.psum_bytes : TL.sbuf_bytes, top = 22, left = 64, plotH = h - top - 8, plotW2 = w - left - 8;
  let peak = 0; /* the address axis spans the bytes in use (the capacity when they fill it) */
  for (let k = 0; k < NT; k++) if (TL.core[k] * 2 + TL.mem[k] === memSel) peak = Math.max(peak, TL.addr[k] + TL.bytes[k]);
  const cap = peak > 0 ? Math.min(full, peak * 1.15) : full;
  const xOf = (t) => left + (t - view.t0) / (view.t1 - view.t0) * plotW2, yOf = (a) => top + a / cap * plotH;
  memCtx.fillStyle = '#3d4756'; memCtx.font = '11px system-ui, sans-serif'; memCtx.textBaseline = 'middle';
  for (let k = 0; k <= 4; k++) {
    const a = cap * k / 4, y = Math.round(yOf(a)) + 0.5;
    memCtx.fillText(fmtBytes(a), 4, y);
    memCtx.strokeStyle = '#eceff3'; memCtx.beginPath(); memCtx.moveTo(left, y); memCtx.lineTo(w, y); memCtx.stroke();
  }
  memCtx.fillText(fmtNs(view.t0), left, top / 2);
  memCtx.fillText(fmtNs(view.t1), w - 60, top / 2);
  memRects = [];
  let used = 0, spills = 0;
  for (let k = 0; k < NT; k++) {
    if (TL.core[k] * 2 + TL.mem[k] !== memSel) continue;
    const x0 = Math.max(left, xOf(TL.t0[k])), x1 = Math.min(w - 8, xOf(TL.t1[k]));
    const y0 = yOf(TL.addr[k]), y1 = yOf(TL.addr[k] + TL.bytes[k]);
    used++;
    if (x1 < left || x0 > w - 8) continue;
    const r = { k, x: x0, y: y0, w: Math.max(1, x1 - x0), h: Math.max(1, y1 - y0) };
    memRects.push(r);
    const loc = TL.loc[k], spill = TL.spill[k] === 2;
    spills += spill;
    memCtx.fillStyle = spill ? 'rgba(217,83,79,.55)' : palette[(loc >= 0 ? loc : 0) % palette.length];
    memCtx.globalAlpha = spill ? 1 : 0.75;
    memCtx.fillRect(r.x, r.y, r.w, r.h);
    memCtx.globalAlpha = 1;
    memCtx.strokeStyle = spill ? '#8b1e1a' : 'rgba(0,0,0,.35)';
    memCtx.strokeRect(r.x + 0.5, r.y + 0.5, Math.max(0, r.w - 1), Math.max(0, r.h - 1));
  }
  $('meminfo').textContent = used + ' tiles' + (spills ? ', ' + spills + ' reloaded from spills' : '') + ' \u00b7 peak ' +
    fmtBytes(peak) + ' of ' + fmtBytes(full) + ' per partition \u00b7 ' + fmtNs(view.t0) + ' to ' + fmtNs(view.t1) +
    ' (the timeline\u2019s zoom)';
}
function tileText(k) {
  const l = TL.loc[k] >= 0 && TL.loc[k] < locLine.length ? TL.loc[k] : -1;
  const f = l >= 0 ? files[locFile[l]] : null;
  return (f ? (f.base || f.path) + ':' + locLine[l] : '?') + ' \u00b7 ' + (TL.mem[k] ? 'PSUM' : 'SBUF') + ' [' +
    TL.addr[k] + ', ' + (TL.addr[k] + TL.bytes[k]) + ') x ' + TL.parts[k] + ' partitions \u00b7 live ' +
    fmtNs(TL.t0[k]) + ' to ' + fmtNs(TL.t1[k]) + (TL.spill[k] === 2 ? ' \u00b7 reloaded from a spill' : '');
}
function tileAt(x, y) {
  for (let i = memRects.length - 1; i >= 0; i--) {
    const r = memRects[i];
    if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + r.h) return r.k;
  }
  return -1;
}
memCanvas.addEventListener('mousemove', (ev) => {
  const b = memCanvas.getBoundingClientRect(), k = tileAt(ev.clientX - b.left, ev.clientY - b.top), tip = $('memtip');
  if (k < 0) { tip.hidden = true; return; }
  tip.textContent = tileText(k);
  tip.hidden = false;
  tip.style.left = Math.min(ev.clientX - b.left + 12, b.width - 300) + 'px';
  tip.style.top = (ev.clientY - b.top + 12) + 'px';
});
memCanvas.addEventListener('mouseleave', () => { $('memtip').hidden = true; });

function showTab(name) {
  document.querySelectorAll('#tabs button').forEach((b) => b.classList.toggle('on', b.dataset.tab === name));
  document.querySelectorAll('.tab').forEach((s) => s.classList.toggle('on', s.id === 'tab-' + name));
  if (name === 'timeline') resize();
  if (name === 'memory') drawMemory();
}
document.querySelectorAll('#tabs button').forEach((b) => b.onclick = () => showTab(b.dataset.tab));

/* ---------------------------------------------------------------- start */

const api = {
  ready: false, draws: 0, loadMs: 0,
  data: D, rows: ROWS, view,
  instructionCount: NI, eventCount: NE,
  get lastDrawMs() { return lastDrawMs; },
  get markCount() { return markCount; },
  get selected() { return selInstr; },
  /* page coordinates of the middle of event e's bar (for tests and scripts) */
  eventPoint(e) {
    const b = canvas.getBoundingClientRect();
    const a = Math.max(LABEL_W, X(evStart[e])), z = Math.min(LABEL_W + plotW(), X(evEnd[e]));
    return { x: b.left + (a + z) / 2, y: b.top + barY(e) + barH(e) / 2, w: z - a };
  },
  eventsOf(i) { const out = []; for (let e = 0; e < NE; e++) if (evInstr[e] === i) out.push(e); return out; },
  event(e) { return { instr: evInstr[e], row: evRow[e], name: evName(e), start: evStart[e], end: evEnd[e] }; },
  kernels: kernelSpans, xOf: X, rowMid(r) { return rowY(r) + rowH(r) / 2; },
  showTab, tileCount: NT, memRects: () => memRects, tileText,
  regions: REGIONS, get labelsDrawn() { return labelsDrawn; }, get arrowsDrawn() { return arrowsDrawn; }, dmaTip,
  siblings, iteration, get markCount() { return markCount; },
  compare: { get events() { return cmp.n; }, get drawn() { return cmpDrawn; }, kernel: CMP ? CMP.kernel : null },
  addMarker, removeMarkerNear, get markers() { return markers.map((m) => ({ t: m.t, note: m.note })); }, notesJson,
  instr(i) { const l = locOf(i); return { op: opName(i), operands: operands(i), file: l.path, line: l.line, start: iStart[i], end: iEnd[i], deps: Array.from(predecessors(i)), succs: Array.from(successors(i)) }; },
  setView, resetView, search: runSearch, selectInstr, boxSelect, draw,
  legend: () => names.map((n, k) => ({ name: n, color: palette[k] })),
};
window.nkview = api;

$('title').innerHTML = esc(D.kernel) + '<small>' + esc(D.target) + ' &#xB7; ' + fmtNs(D.total_ns) + ' &#xB7; ' + NI + ' instructions</small>';
renderSummary();
renderInsights();
{
  let best = -1, bestN = -1;
  lineStats.forEach((m, k) => { if (m.size > bestN) { bestN = m.size; best = k; } });
  renderSource(best);
  /* open at the kernel: its first line with instructions, a few lines of its head above */
  let first = Infinity;
  if (best >= 0) lineStats[best].forEach((v, line) => { if (line < first) first = line; });
  if (first !== Infinity) scrollSourceTo(Math.max(1, first - 4));
}
window.addEventListener('resize', () => { fitSource(); resize(); });
resize();
api.loadMs = performance.now() - t0Load;
api.ready = true;
})();
