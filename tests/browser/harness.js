/*
 * The browser tests' runner, shared by viewer.test.js and speedscope.test.js:
 * a headless Chromium (a persistent context in a fresh profile directory,
 * offline), then each test in order. A test fails on a throw or, when an
 * errors array is given, on anything added to it while the test ran (console
 * errors, page errors, network requests). Prints "N passed, N failed" last
 * and exits 1 when one failed.
 */
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const os = require('os');
const path = require('path');

function assert(cond, msg) { if (!cond) throw new Error(msg); }
function eq(a, b, msg) { if (a !== b) throw new Error(msg + ': ' + JSON.stringify(a) + ' != ' + JSON.stringify(b)); }

/* opts: name (for the profile directory and a set-up failure), context
 * (more launch options), setup(ctx) (its value is each test's argument),
 * errors (an array the page handlers fill). */
async function run(tests, opts) {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nklab-' + opts.name + '-'));
  const errors = opts.errors || [];
  let passed = 0, failed = 0, ctx;
  try {
    ctx = await chromium.launchPersistentContext(userDir, Object.assign({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      viewport: { width: 1400, height: 850 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
             '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    }, opts.context || {}));
    const arg = opts.setup ? await opts.setup(ctx) : undefined;
    for (const t of tests) {
      const n0 = errors.length;
      try {
        await t.fn(arg);
        if (errors.length > n0) throw new Error('console errors: ' + errors.slice(n0).join(' | '));
        passed++;
        if (process.env.VERBOSE) console.log('ok   ' + t.name);
      } catch (e) {
        failed++;
        console.log('FAIL ' + t.name + ': ' + (e && e.message ? e.message : e));
      }
    }
  } catch (e) {
    failed++;
    console.log('FAIL ' + opts.name + ': ' + (e && e.message ? e.message : e));
  } finally {
    if (ctx) await ctx.close().catch(() => {});
    fs.rmSync(userDir, { recursive: true, force: true });
  }
  console.log(passed + ' passed, ' + failed + ' failed');
  process.exit(failed ? 1 : 0);
}

module.exports = { run, assert, eq };
