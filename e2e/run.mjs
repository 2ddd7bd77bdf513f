#!/usr/bin/env node
// End-to-end test of the OpLens extension in a real VS Code: code-server (VS Code in the browser)
// on 127.0.0.1, driven by headless Debian Chromium through playwright-core.
//
//   bash e2e/install.sh        # once per machine (cached afterwards)
//   node e2e/run.mjs           # uses the newest oplens-*.vsix at the repository root
//
// Options:
//   --vsix PATH       the extension package to install (default: newest <repo>/oplens-*.vsix)
//   --smoke           no extension: prove code-server + Chromium + the workspace only
//   --keep            keep the temporary folder (code-server logs, workspace, runs) for inspection
//   --serve-only      set up and start code-server (extension installed), print its URL and wait (debugging)
//   --program-only    after opening rmsnorm.py, only the Profile Function in Program… steps (Block.forward)
//   --tunnel-only     after opening rmsnorm.py, only the steps through a real SSH tunnel (e2e/tunnel_host.py)
//   --overview-only   after opening rmsnorm.py, only the program overview's steps (train_step, ▶ lines of Block.forward)
//   --notebook-only   after opening rmsnorm.py, only the notebook's steps (notebook.ipynb, its cells run by a real kernel)
//   --screenshots DIR at the end of a passing run, copy the screenshots the READMEs show (DOC_SHOTS) to DIR as
//                     <step name>.png; `make screenshots` then makes docs/images/ of them (e2e/pictures.sh)
// Environment: OPLENS_E2E_PYTHON overrides the editor's interpreter (default: a fresh environment with torch only,
//   tests/torchonly.py, served from the .vsix's bundled libraries; the notebook's kernel and the tunnel's host use
//   <repo>/.venv/bin/python);
//   OPLENS_E2E_TORCH_THREADS sets OMP_NUM_THREADS for the profiled code (default 1; empty: unset).
//
// Screenshots of every step go to e2e/artifacts/, code-server's and VS Code's logs (the OpLens output
// among them) to e2e/artifacts/logs/. Exit code 0 when every assertion holds; otherwise non-zero
// with the failed step, the reason, a screenshot and the tails of code-server's and the extension
// host's logs. e2e/artifacts/timings.json gets {"open_to_first_lens_s": N}: the seconds from the click
// that opens rmsnorm.py to the first "▶ Profile" CodeLens (extension activation and server start
// included), a measurement that fails the run only when no lens comes within 60 s.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const E2E_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(E2E_DIR, '..');
const ARTIFACTS = path.join(E2E_DIR, 'artifacts');
const CODE_SERVER = path.join(E2E_DIR, 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.OPLENS_E2E_CHROMIUM || '/usr/bin/chromium';
const TOTAL_BUDGET_MS = 14 * 60 * 1000;
const PROFILE_TIMEOUT_MS = 4 * 60 * 1000; // first profile pays server start + import torch
const ARGS_EXPR = 'make_inputs(2, 64, 256)';
// The edit of the diff steps: x * x becomes the mean of 64 copies of it (the same values, 64 multiplies
// and 63 adds on tensors of its own size). The diff's minimum effect grows with how far the unchanged
// lines move between two runs, in the direction of the change: the edit must not move them itself.
// An earlier edit, one 64-wide broadcast, made an 8 MiB temporary whose allocation and cache misses
// slowed the lines after it 3-5× as well, so a 13× slower total could read "same".
const EDITED_FROM = 'x_sq = x * x';
const EDITED_TO = 'x_sq = sum(x * x for _ in range(64)) / 64';
const TIME_RE = /\d[\d.,]*\s?(?:µs|us|ms|s)\b/;
// Profile Function in Program…: e2e/workspace/ (copied over examples/) has train_tinyblock.py, which
// calls tinyblock.Block.forward, a launch configuration that runs it, and the capture settings.
const PROGRAM_LENS = '▶ Profile in Program…';
const LAUNCH_NAME = 'Train tiny block';
const SLEEPY_PROGRAM = 'train_tinyblock.py --sleep 600';
// 3 steps call Block.forward 6 times (two blocks a step); the capture needs 2 + 2 profiler warm-up + 5
const SHORT_PROGRAM = 'train_tinyblock.py --steps 3';
// a capture's totals lens counts the profiled calls (`5 calls`; older servers said `5 iters`)
const CAPTURED_5 = /\b5 (calls|iters)\b/;
const CAPTURED_PARTIAL = /\b[1-4] (calls?|iters?)\b/;
// --screenshots DIR: the screenshots e2e/pictures.sh makes the READMEs' pictures of (docs/images/)
const DOC_SHOTS = ['editor-rmsnorm', 'context-menu', 'context-menu-oplens', 'argument-box', 'editor-profiled', 'results-roofline',
  'compare-summary', 'editor-diff-hints', 'overview-hot-functions', 'notebook-profiled'];

// ------------------------------------------------------------------ arguments
const argv = process.argv.slice(2);
const opt = { vsix: null, smoke: false, keep: false, serveOnly: false, programOnly: false, tunnelOnly: false, overviewOnly: false, notebookOnly: false, screenshots: null };
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--vsix') opt.vsix = path.resolve(argv[++i]);
  else if (a === '--smoke') opt.smoke = true;
  else if (a === '--keep') opt.keep = true;
  else if (a === '--serve-only') opt.serveOnly = true;
  else if (a === '--program-only') opt.programOnly = true;
  else if (a === '--tunnel-only') opt.tunnelOnly = true;
  else if (a === '--overview-only') opt.overviewOnly = true;
  else if (a === '--notebook-only') opt.notebookOnly = true;
  else if (a === '--screenshots') opt.screenshots = path.resolve(argv[++i]);
  else if (a === '-h' || a === '--help') {
    const lines = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
    console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
    process.exit(0);
  } else fail('arguments', `unknown argument ${a}`);
}

// ------------------------------------------------------------------ logging and failure
const t0 = Date.now();
const since = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s`;
const log = (msg) => console.log(`[e2e ${since()}] ${msg}`);
let currentStep = 'set-up';
let page = null;
let server = null;
let context = null;
let tmpRoot = null;
let csPort = null; // code-server's
const cleanups = []; // what a phase started, ended in cleanup()
let shotIndex = 0;

class StepFailure extends Error {}

function fail(step, message) {
  console.error(`\n[e2e] FAILED at step "${step}": ${message}`);
  process.exit(2);
}

async function screenshot(name) {
  if (!page) return null;
  const file = path.join(ARTIFACTS, `${String(++shotIndex).padStart(2, '0')}-${name}.png`);
  try {
    await page.screenshot({ path: file, timeout: 15000 });
    log(`screenshot ${path.relative(REPO, file)}`);
    return file;
  } catch (e) {
    log(`(screenshot ${name} failed: ${e.message.split('\n')[0]})`);
    return null;
  }
}

async function step(name, fn) {
  currentStep = name;
  log(`▶ ${name}`);
  const started = Date.now();
  const result = await fn();
  log(`✓ ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  return result;
}

/** Poll `probe` until it returns a truthy value; throw StepFailure(what) after timeoutMs. */
async function waitFor(what, probe, timeoutMs, intervalMs = 500) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (e) {
      if (e instanceof StepFailure) throw e; // a definite failure seen while polling: stop now
      last = e;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? ` (last error: ${last.message.split('\n')[0]})` : '';
      throw new StepFailure(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what}${detail}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function tailFile(file, lines = 40) {
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return null;
  }
}

function findFiles(dir, pred, out = []) {
  let entries = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) findFiles(p, pred, out);
    else if (pred(p)) out.push(p);
  }
  return out;
}

function dumpLogs() {
  if (!tmpRoot) return;
  const csLog = path.join(tmpRoot, 'code-server.log');
  const t = tailFile(csLog, 30);
  if (t) console.error(`\n--- tail of ${csLog}\n${t}`);
  const logsDir = path.join(tmpRoot, 'user-data', 'logs');
  const interesting = findFiles(logsDir, (p) => /exthost\.log$|oplens/i.test(path.relative(logsDir, p)));
  for (const f of interesting) {
    const tl = tailFile(f, 40);
    if (tl) console.error(`\n--- tail of ${f}\n${tl}`);
  }
}

// ------------------------------------------------------------------ helpers
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function newestVsix() {
  const found = fs
    .readdirSync(REPO)
    .filter((f) => /^oplens-.*\.vsix$/.test(f))
    .map((f) => path.join(REPO, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  return found[0] ?? null;
}

const torchThreads = process.env.OPLENS_E2E_TORCH_THREADS ?? '1';

function codeServerEnv() {
  // code-server writes config.yaml and state under XDG dirs: keep them in the temp folder, not $HOME.
  return {
    ...process.env,
    XDG_CONFIG_HOME: path.join(tmpRoot, 'xdg-config'),
    XDG_DATA_HOME: path.join(tmpRoot, 'xdg-data'),
    XDG_CACHE_HOME: path.join(tmpRoot, 'xdg-cache'),
    // torch's intra-op thread pool on a small, busy CI machine turns a 20 µs reduction into
    // milliseconds of spinning: pin it (inherited by the OpLens server and its worker) so the CPU
    // figures in the screenshots are the kernels' own. OPLENS_E2E_TORCH_THREADS= (empty) leaves it alone.
    ...(torchThreads ? { OMP_NUM_THREADS: torchThreads, MKL_NUM_THREADS: torchThreads } : {}),
    // the Jupyter stand-in (e2e/standins/jupyter) runs code in a notebook's kernel with these
    OPLENS_E2E_KERNEL_EXEC: path.join(E2E_DIR, 'kernel_exec.py'),
    OPLENS_E2E_PYTHON_FOR_STANDIN: process.env.OPLENS_E2E_PYTHON || path.join(REPO, '.venv', 'bin', 'python'),
    PASSWORD: '',
    HASHED_PASSWORD: '',
    GITHUB_TOKEN: '',
  };
}

function commonCsArgs() {
  return [
    '--config', path.join(tmpRoot, 'code-server.yaml'),
    '--user-data-dir', path.join(tmpRoot, 'user-data'),
    '--extensions-dir', path.join(tmpRoot, 'extensions'),
  ];
}

/** Keep code-server's and the extension host's logs (the OpLens output channel among them) as artifacts. */
function saveLogs() {
  if (!tmpRoot) return;
  const dest = path.join(ARTIFACTS, 'logs');
  try {
    fs.rmSync(dest, { recursive: true, force: true });
    fs.mkdirSync(dest, { recursive: true });
    const csLog = path.join(tmpRoot, 'code-server.log');
    if (fs.existsSync(csLog)) fs.copyFileSync(csLog, path.join(dest, 'code-server.log'));
    const logsDir = path.join(tmpRoot, 'user-data', 'logs');
    if (fs.existsSync(logsDir)) fs.cpSync(logsDir, path.join(dest, 'vscode'), { recursive: true });
  } catch (e) {
    log(`(could not save logs: ${e.message})`);
  }
}

function cleanup() {
  for (const end of cleanups.splice(0)) {
    try {
      end();
    } catch {}
  }
  saveLogs();
  if (server && server.exitCode === null) {
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {}
  }
  if (tmpRoot && !opt.keep) {
    fs.rmSync(tmpRoot, { recursive: true, force: true });
  } else if (tmpRoot) {
    log(`kept ${tmpRoot}`);
  }
}

// Monaco renders each visible line as a .view-line; injected text (inlay hints) is part of it.
// Monaco draws spaces as U+00A0; normalise them so code can be matched as written.
async function editorLines() {
  const texts = await page.locator('.monaco-editor .view-lines .view-line').allTextContents();
  return texts.map((t) => t.replace(/\u00a0/g, ' '));
}

async function codeLensTexts() {
  return page.locator('.monaco-editor .codelens-decoration').allTextContents();
}

const LENS_TIMEOUT_MS = 60000;

/**
 * A stopwatch inside the page, for "open a file → first ▶ Profile lens": it starts at the next
 * pointer-down (the click that opens the file) and stops when a MutationObserver first sees a
 * CodeLens whose text contains "Profile"; on the way it notes when the OpLens status-bar item first
 * says "starting" and first appears without it (the server ready), a diagnostic only. Page clock
 * (performance.now()), so Playwright's round trips are not in the figure.
 */
async function armLensClock() {
  await page.evaluate(() => {
    const st = { origin: performance.timeOrigin, clickAt: null, lensAt: null, lensText: null, startingAt: null, readyAt: null, status: [] };
    window.__oplensLensClock = st;
    window.addEventListener('pointerdown', () => { st.clickAt ??= performance.now(); }, { capture: true, once: true });
    const check = () => {
      if (st.clickAt === null) return;
      const now = performance.now();
      if (st.readyAt === null) {
        for (const el of document.querySelectorAll('.statusbar .statusbar-item')) {
          const t = el.textContent || '';
          if (!/OpLens/.test(t)) continue;
          if (st.status.length < 10 && st.status.at(-1)?.[1] !== t.trim()) st.status.push([now, t.trim()]);
          if (/starting/i.test(t)) st.startingAt ??= now;
          else if (!/not running|stopped/i.test(t)) st.readyAt = now;
        }
      }
      if (st.lensAt === null) {
        for (const el of document.querySelectorAll('.monaco-editor .codelens-decoration')) {
          const t = el.textContent || '';
          if (t.includes('Profile')) {
            st.lensAt = now;
            st.lensText = t;
            break;
          }
        }
      }
      if (st.lensAt !== null && st.readyAt !== null) observer.disconnect();
    };
    const observer = new MutationObserver(check);
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
    setTimeout(() => observer.disconnect(), 120000);
  });
}

/**
 * Where the time between the click and the lens went, from the extension host's and the OpLens
 * output channel's logs (best effort: a line that is not there, or reworded, reads "—").
 */
function lensPhases(clickMs, lensMs) {
  const logsDir = path.join(tmpRoot, 'user-data', 'logs');
  const lines = (re) =>
    findFiles(logsDir, (p) => re.test(path.relative(logsDir, p))).flatMap((f) => fs.readFileSync(f, 'utf8').split('\n'));
  const when = (text, re) => {
    const line = text.find((l) => re.test(l));
    const m = line && /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})/.exec(line);
    const t = m ? new Date(m[1].replace(' ', 'T')).getTime() : Number.NaN; // the logs' local time
    return Number.isFinite(t) ? `${((t - clickMs) / 1000).toFixed(2)} s` : '—';
  };
  const exthost = lines(/exthost\.log$/);
  const oplens = lines(/oplens.*\.log$/i);
  return [
    `extension host started ${when(exthost, /Extension host with pid/)}`,
    `OpLens activated ${when(exthost, /_doActivateExtension oplens\./)}`,
    `server spawned ${when(oplens, /\bstarting\b.*\bserve\b/)}`,
    `server ready ${when(oplens, /server ready/)}`,
    `lens ${((lensMs - clickMs) / 1000).toFixed(2)} s`,
  ].join(', ');
}

async function readLensClock() {
  return page.evaluate(() => window.__oplensLensClock ?? null);
}

/** The visible context menu (VS Code web draws it in a shadow root; Playwright's CSS pierces it). */
function contextMenu() {
  return page.locator('.context-view .monaco-menu');
}

async function rightClickOnLine(textOnLine) {
  const idx = await waitFor(
    `an editor line containing "${textOnLine}"`,
    async () => {
      const i = (await editorLines()).findIndex((l) => l.includes(textOnLine));
      return i >= 0 ? i + 1 : null;
    },
    20000,
  );
  const box = await page.locator('.monaco-editor .view-lines .view-line').nth(idx - 1).boundingBox();
  // Click inside the code (a few characters in), not on whitespace past the end of the line.
  await page.mouse.click(box.x + 60, box.y + box.height / 2, { button: 'right' });
  await contextMenu().first().waitFor({ state: 'visible', timeout: 10000 });
}

async function clickMenuItem(labelRe, submenuShot = null) {
  const items = contextMenu().locator('.action-item .action-label');
  await waitFor('the context menu items', async () => (await items.count()) > 0, 10000);
  let labels = await items.allTextContents();
  let idx = labels.findIndex((l) => labelRe.test(l.trim()));
  const submenu = labels.findIndex((l) => l.trim() === 'OpLens');
  if (idx < 0 && submenu >= 0) {
    // OpLens's commands sit in its one "OpLens" submenu (package.json's oplens.editorContext): open it as a
    // user does, by hovering, and by a click where the hover does not open it
    const shown = async () => (await items.allTextContents()).some((l) => labelRe.test(l.trim()));
    await items.nth(submenu).hover();
    if (!(await waitFor('the OpLens submenu', shown, 3000, 250).catch(() => false))) {
      await items.nth(submenu).click();
      await waitFor('the OpLens submenu', shown, 5000, 250);
    }
    labels = await items.allTextContents();
    idx = labels.findIndex((l) => labelRe.test(l.trim()));
    if (submenuShot) await screenshot(submenuShot);
  }
  if (idx < 0) {
    throw new StepFailure(`no context menu item matching ${labelRe}; the menu has: ${labels.filter(Boolean).join(' | ')}`);
  }
  // VS Code's menu now and then ignores a click that comes right after it opened (seen in CI: the
  // item highlighted, the menu still open): a menu that stays open did not run the command.
  for (let attempt = 1; attempt <= 3; attempt++) {
    await items.nth(idx).click();
    const closed = await contextMenu().first().waitFor({ state: 'hidden', timeout: 3000 }).then(() => true, () => false);
    if (closed) return;
    log(`the context menu is still open after clicking ${labels[idx].trim()} (attempt ${attempt})`);
  }
  throw new StepFailure(`the context menu did not take the click on ${labels[idx].trim()}`);
}

async function quickInputVisible() {
  return page.locator('.quick-input-widget').isVisible();
}

/** The frame of a webview whose document contains `text` (webviews are nested iframes in code-server). */
async function findWebviewFrame(text) {
  for (const frame of page.frames()) {
    if (frame === page.mainFrame()) continue;
    try {
      const body = await frame.evaluate(() => document.body?.innerText ?? '');
      if (body.includes(text)) return frame;
    } catch {}
  }
  return null;
}

/** Left-click inside the code of the first editor line containing `textOnLine` (the cursor lands there). */
async function clickOnLine(textOnLine) {
  const idx = await waitFor(
    `an editor line containing "${textOnLine}"`,
    async () => {
      const i = (await editorLines()).findIndex((l) => l.includes(textOnLine));
      return i >= 0 ? i + 1 : null;
    },
    20000,
  );
  const box = await page.locator('.monaco-editor .view-lines .view-line').nth(idx - 1).boundingBox();
  await page.mouse.click(box.x + 60, box.y + box.height / 2);
}

/**
 * After Profile Function: answer the argument box with ARGS_EXPR (if asked) and poll `done` until
 * it returns something; an OpLens error notification fails the step at once.
 */
async function answerArgumentsUntil(what, done, shot = null, args = ARGS_EXPR) {
  let answered = false;
  return waitFor(
    what,
    async () => {
      if (!answered && (await quickInputVisible())) {
        const prompt = await page.locator('.quick-input-widget').innerText();
        log(`argument box: ${prompt.replace(/\s+/g, ' ').slice(0, 160)}`);
        if (shot) await screenshot(shot);
        await page.locator('.quick-input-widget input').fill(args);
        await page.keyboard.press('Enter');
        answered = true;
        log(`answered ${args}`);
      }
      const errors = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
      const err = errors.find((t) => /error|failed|cannot|could not/i.test(t) && /oplens/i.test(t));
      if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
      return done();
    },
    PROFILE_TIMEOUT_MS,
    1000,
  ).catch(async (e) => {
    if (e instanceof StepFailure && /the extension reported/.test(e.message)) throw e;
    const lenses = await codeLensTexts().catch(() => []);
    throw new StepFailure(`${e.message}; lenses seen: ${JSON.stringify(lenses)}`);
  });
}

// ------------------------------------------------------------------ the test
async function main() {
  const overall = setTimeout(() => {
    console.error(`\n[e2e] FAILED: the whole run exceeded ${TOTAL_BUDGET_MS / 60000} minutes (at step "${currentStep}")`);
    dumpLogs();
    cleanup();
    process.exit(3);
  }, TOTAL_BUDGET_MS);
  overall.unref();

  // --- preconditions, each with the command that fixes it
  if (!fs.existsSync(CODE_SERVER)) fail('preconditions', `${CODE_SERVER} is missing: run \`bash e2e/install.sh\``);
  if (!fs.existsSync(CHROMIUM)) fail('preconditions', `${CHROMIUM} is missing: run \`bash e2e/install.sh\``);
  const python = process.env.OPLENS_E2E_PYTHON || path.join(REPO, '.venv', 'bin', 'python');
  const vsix = opt.smoke ? null : opt.vsix || newestVsix();
  if (!opt.smoke) {
    if (!vsix || !fs.existsSync(vsix)) {
      fail('preconditions', `no extension package: expected ${opt.vsix || path.join(REPO, 'oplens-<version>.vsix')}; build it with \`npm ci && npm run package\` at the repository root (or pass --smoke to test code-server alone)`);
    }
    const check = spawnSync(python, ['-c', 'import oplens, torch'], { encoding: 'utf8' });
    if (check.status !== 0) {
      fail('preconditions', `${python} cannot import oplens and torch (run \`make setup\`): ${(check.stderr || check.error?.message || '').trim().split('\n').pop()}`);
    }
  }
  const { chromium } = await import(path.join(E2E_DIR, 'node_modules', 'playwright-core', 'index.mjs'));

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const f of fs.readdirSync(ARTIFACTS)) fs.rmSync(path.join(ARTIFACTS, f), { recursive: true, force: true });
  tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'oplens-e2e-'));
  const workspace = path.join(tmpRoot, 'workspace');
  const userData = path.join(tmpRoot, 'user-data');
  const port = await freePort();
  csPort = port;
  log(`temp folder ${tmpRoot}; code-server port ${port}${vsix ? `; extension ${path.relative(REPO, vsix)}` : ' (smoke: no extension)'}`);

  // The editor's interpreter: a fresh environment with torch only (no OpLens, no pygls, no numpy), so the server
  // the extension starts is the one its .vsix carries (bundled/libs). OPLENS_E2E_PYTHON names another.
  let editorPython = process.env.OPLENS_E2E_PYTHON || '';
  await step('prepare workspace and settings', async () => {
    if (!editorPython) {
      const made = spawnSync(python, [path.join(REPO, 'tests', 'torchonly.py'), path.join(tmpRoot, 'torch-only')], { encoding: 'utf8', timeout: 300000 });
      if (made.status !== 0) throw new StepFailure(`could not make the torch-only environment: ${made.stderr}`);
      editorPython = made.stdout.trim();
      log(`the editor's interpreter: ${editorPython} (torch only: the extension serves it from its bundled libraries)`);
    }
    fs.cpSync(path.join(REPO, 'examples'), workspace, { recursive: true });
    fs.cpSync(path.join(E2E_DIR, 'workspace'), workspace, { recursive: true });
    fs.writeFileSync(path.join(tmpRoot, 'code-server.yaml'), `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
    fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
    const settings = {
      'oplens.pythonPath': editorPython,
      'oplens.backend': 'cpu',
      'oplens.iterations': 10,
      'oplens.warmup': 2,
      // every profiled line gets its hint (the default hides lines under 1 % of the function's time)
      'oplens.hintThreshold': 0,
      'security.workspace.trust.enabled': false,
      'security.workspace.trust.startupPrompt': 'never',
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'workbench.enableExperiments': false,
      'workbench.welcomePage.walkthroughs.openOnInstall': false,
      'workbench.secondarySideBar.defaultVisibility': 'hidden',
      'chat.commandCenter.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'update.mode': 'none',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'extensions.ignoreRecommendations': true,
      'git.enabled': false,
      'git.openRepositoryInParentFolders': 'never',
      'editor.minimap.enabled': false,
      'editor.inlayHints.enabled': 'on',
      'editor.codeLens': true,
      'window.restoreWindows': 'none',
      'files.hotExit': 'off',
      'workbench.editor.enablePreview': false,
    };
    fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  });

  if (vsix) {
    await step('install the .vsix into code-server', async () => {
      const r = spawnSync(CODE_SERVER, [...commonCsArgs(), '--force', '--install-extension', vsix], {
        env: codeServerEnv(),
        encoding: 'utf8',
        timeout: 120000,
      });
      const out = `${r.stdout}\n${r.stderr}`.trim();
      if (r.status !== 0 || !/successfully installed|already installed/i.test(out)) {
        throw new StepFailure(`code-server --install-extension ${vsix} failed (exit ${r.status}):\n${out}`);
      }
      const list = spawnSync(CODE_SERVER, [...commonCsArgs(), '--list-extensions', '--show-versions'], {
        env: codeServerEnv(),
        encoding: 'utf8',
        timeout: 60000,
      });
      const installed = list.stdout.split('\n').filter((l) => /oplens/i.test(l));
      if (!installed.length) throw new StepFailure(`the extension is not listed after install:\n${list.stdout}${list.stderr}`);
      log(`installed: ${installed.join(', ')}`);
    });

    await step('install the Jupyter extension\'s stand-in (its kernels API over a real ipykernel; the real one cannot be installed here)', async () => {
      const standin = path.join(tmpRoot, 'jupyter-standin.vsix');
      const vsce = path.join(REPO, 'node_modules', '.bin', 'vsce');
      const packed = spawnSync(vsce, ['package', '--no-dependencies', '--skip-license', '-o', standin], {
        cwd: path.join(E2E_DIR, 'standins', 'jupyter'), encoding: 'utf8', timeout: 120000,
      });
      if (packed.status !== 0) throw new StepFailure(`vsce package of the Jupyter stand-in failed:\n${packed.stdout}${packed.stderr}`);
      const r = spawnSync(CODE_SERVER, [...commonCsArgs(), '--force', '--install-extension', standin], { env: codeServerEnv(), encoding: 'utf8', timeout: 120000 });
      if (r.status !== 0) throw new StepFailure(`installing the Jupyter stand-in failed:\n${r.stdout}${r.stderr}`);
    });
  }

  await step('start code-server', async () => {
    const logFd = fs.openSync(path.join(tmpRoot, 'code-server.log'), 'w');
    server = spawn(
      CODE_SERVER,
      [
        ...commonCsArgs(),
        '--bind-addr', `127.0.0.1:${port}`,
        '--auth', 'none',
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--disable-getting-started-override',
        '--ignore-last-opened',
        workspace,
      ],
      { env: codeServerEnv(), stdio: ['ignore', logFd, logFd], detached: true },
    );
    server.on('exit', (code, signal) => log(`code-server exited (${code ?? signal})`));
    await waitFor(
      `code-server to answer on http://127.0.0.1:${port}/healthz`,
      async () => {
        if (server.exitCode !== null) throw new StepFailure(`code-server exited with ${server.exitCode}:\n${tailFile(path.join(tmpRoot, 'code-server.log'))}`);
        const r = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
        return r && r.ok;
      },
      60000,
      250,
    );
  });

  if (opt.serveOnly) {
    log(`serving http://127.0.0.1:${port}/?folder=${workspace}; Ctrl-C to stop`);
    await new Promise(() => {});
  }

  await step('launch Chromium and open the workspace', async () => {
    context = await chromium.launchPersistentContext(path.join(tmpRoot, 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--disable-dev-shm-usage',
      ],
      // Chromium's crash handler writes under $XDG_CONFIG_HOME/chromium whatever the profile: keep it in the temp folder
      env: { ...process.env, XDG_CONFIG_HOME: path.join(tmpRoot, 'xdg-config'), XDG_CACHE_HOME: path.join(tmpRoot, 'xdg-cache') },
      viewport: { width: 1920, height: 1080 },
      deviceScaleFactor: 1,
      timeout: 60000,
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20000);
    const consoleErrors = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`, { waitUntil: 'domcontentloaded' });
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
    // The explorer shows the workspace's file once the remote file system is connected.
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'rmsnorm.py' }).first().waitFor({ timeout: 60000 });
    await screenshot('workbench');
  });

  await step('open rmsnorm.py', async () => {
    // A measurement, not an assertion (except that a lens must come within 60 s): the time from the
    // click to the first "▶ Profile" CodeLens. No Python file is open before, so the extension
    // activates (onLanguage:python) and starts the language server on this click: both are in it.
    const armed = opt.smoke ? false : await armLensClock().then(() => true, (e) => {
      log(`(lens clock not armed in the page: ${e.message.split('\n')[0]}; timing from here instead)`);
      return false;
    });
    const clickedAt = Date.now();
    const lensSeen = opt.smoke
      ? null
      : waitFor(
        'a ▶ Profile CodeLens in rmsnorm.py',
        async () => ((await codeLensTexts()).some((t) => t.includes('Profile')) ? Date.now() : null),
        LENS_TIMEOUT_MS,
        100,
      );
    lensSeen?.catch(() => {}); // awaited below; do not let an early failure elsewhere make it unhandled
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'rmsnorm.py' }).first().click();
    await waitFor(
      'the editor to show rmsnorm.py with def rmsnorm_naive',
      async () => (await editorLines()).some((l) => l.includes('def rmsnorm_naive')),
      30000,
    );
    const tab = await page.locator('.tabs-container .tab.active').first().textContent();
    if (!tab.includes('rmsnorm.py')) throw new StepFailure(`the active tab is "${tab}", not rmsnorm.py`);
    // The status bar names the language once the editor is ready (Python, from the built-in grammar).
    await waitFor('the status bar to show the Python language mode', async () => {
      const t = await page.locator('.statusbar').textContent();
      return /Python/.test(t);
    }, 30000);
    await screenshot('editor-rmsnorm');

    if (lensSeen) {
      const seenAt = await lensSeen.catch(async (e) => {
        const lenses = await codeLensTexts().catch(() => []);
        throw new StepFailure(`no ▶ Profile CodeLens within ${LENS_TIMEOUT_MS / 1000}s of opening rmsnorm.py (${e.message}); lenses seen: ${JSON.stringify(lenses)}`);
      });
      try {
        let clock = armed ? await readLensClock() : null;
        if (armed && clock?.lensAt == null) {
          // the poller can see the lens a moment before the observer's callback has run
          await page.waitForFunction(() => window.__oplensLensClock?.lensAt != null, null, { timeout: 2000 }).catch(() => {});
          clock = await readLensClock();
        }
        const inPage = clock && clock.clickAt != null && clock.lensAt != null;
        const seconds = inPage ? (clock.lensAt - clock.clickAt) / 1000 : (seenAt - clickedAt) / 1000;
        const at = (t) => (t == null ? 'not seen' : `${((t - clock.clickAt) / 1000).toFixed(2)} s`);
        const server = inPage
          ? `the OpLens status item said "starting" at ${at(clock.startingAt)}, ready at ${at(clock.readyAt)}`
          : 'timed by polling from Node (±0.1 s), not in the page';
        const clickWall = new Date(inPage ? clock.origin + clock.clickAt : clickedAt).toISOString();
        log(`lens latency: ${seconds.toFixed(2)} s (open rmsnorm.py → first ▶ Profile lens); includes the extension's activation and the language server's start, which this click triggers: ${server} (click at ${clickWall}, to line up with the logs)`);
        try {
          const clickMs = inPage ? clock.origin + clock.clickAt : clickedAt;
          log(`(after the click, from the logs: ${lensPhases(clickMs, clickMs + seconds * 1000)})`);
        } catch (e) {
          log(`(no phases from the logs: ${e.message.split('\n')[0]})`);
        }
        if (inPage && clock.status.length) log(`(OpLens status item: ${clock.status.map(([t, text]) => `${at(t)} "${text}"`).join(', ')})`);
        fs.writeFileSync(path.join(ARTIFACTS, 'timings.json'), `${JSON.stringify({ open_to_first_lens_s: Number(seconds.toFixed(3)) })}\n`);
      } catch (e) {
        log(`(lens latency not recorded: ${e.message.split('\n')[0]})`);
      }
    }
  });

  if (opt.smoke) {
    await step('smoke: context menu in the editor', async () => {
      await rightClickOnLine('x_sq = x * x');
      await screenshot('context-menu');
      const labels = (await contextMenu().locator('.action-item .action-label').allTextContents()).filter(Boolean);
      log(`context menu: ${labels.join(' | ')}`);
      if (!labels.some((l) => /Go to Definition|Command Palette|Cut|Copy/.test(l))) {
        throw new StepFailure(`the editor context menu looks wrong: ${labels.join(' | ')}`);
      }
      await page.keyboard.press('Escape');
    });
    log('smoke test passed (code-server, Chromium, workspace, editor; no extension installed)');
    return;
  }

  if (opt.tunnelOnly) {
    await throughTheTunnel(python);
    log('PASSED (--tunnel-only): profiled through a real SSH tunnel with path mappings; the tunnel killed mid-profile, "disconnected, reconnecting", a command refused meanwhile, the extension reconnected by itself and showed the run the host finished (not re-run)');
    return;
  }
  if (opt.overviewOnly) {
    await programOverview();
    log('PASSED (--overview-only): a program overview of train_tinyblock.py from its launch configuration (train_step\'s steps), lenses on functions in two files, the Hot Functions view, the results page\'s call tree, and ▶ lines of Block.forward captured its lines');
    return;
  }
  if (opt.notebookOnly) {
    await notebookCells(python);
    log(`PASSED (--notebook-only): ${NOTEBOOK_PASSED}`);
    return;
  }
  if (!opt.programOnly) await profileCompareAndDiff();
  if (!opt.programOnly) await packageModule();
  if (!opt.programOnly) await cancelProfile();
  if (!opt.programOnly) await walkthrough();
  await captureInProgram();
  if (!opt.programOnly) await programOverview();
  if (!opt.programOnly) await notebookCells(python);
  if (!opt.programOnly) await fromEnvironment(python, userData);
  if (!opt.programOnly) await throughTheTunnel(python);
  log(opt.programOnly
    ? 'PASSED (--program-only): Block.forward captured inside train_tinyblock.py from its launch configuration, a partial capture reported, and a typed program cancelled'
    : `PASSED: totals lens, per-line hints, results panel with aten::mul, its roofline chart (a dot\'s hover and click), comparison with speed-ups, after an edit a ▲ hint, the lens verdict and the results page\'s "vs previous run" view, GatedMLP.forward of a package module with a relative import, the Get Started walkthrough and its first step's button, Block.forward captured inside train_tinyblock.py from its launch configuration, a partial capture reported, and a typed program cancelled, a program overview (lenses in two files, Hot Functions, the call tree, ▶ lines), ${NOTEBOOK_PASSED}, importStrategy fromEnvironment (the interpreter's own OpLens) profiling, and through a real SSH tunnel: a profile with path mappings, the tunnel killed mid-profile and the run shown after the extension reconnected by itself`);
}

/** Profile rmsnorm_naive, compare the three variants, edit rmsnorm_naive and diff the new run. */
async function profileCompareAndDiff() {
  // ---------------------------------------------------------------- profile rmsnorm_naive
  await step('right-click in rmsnorm_naive → OpLens: Profile Function', async () => {
    await rightClickOnLine('x_sq = x * x');
    await screenshot('context-menu');
    await clickMenuItem(/^(OpLens: )?Profile Function$/, 'context-menu-oplens');
  });

  await step('answer the argument box (if asked) and wait for the profile', async () => {
    await answerArgumentsUntil(
      'the CodeLens totals line over rmsnorm_naive (… ops · … iters)',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      'argument-box',
    );
  });

  await step('assert: totals lens, per-line hints, results panel op table', async () => {
    const lenses = await codeLensTexts();
    const totals = lenses.find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t));
    log(`totals lens: ${totals}`);
    if (!/CPU/.test(totals)) throw new StepFailure(`the totals lens does not name the CPU backend: "${totals}"`);
    if (!/\b6 ops\b/.test(totals)) throw new StepFailure(`the totals lens should count 6 ops for rmsnorm_naive: "${totals}"`);
    if (!TIME_RE.test(totals)) throw new StepFailure(`the totals lens carries no time: "${totals}"`);

    const hinted = await waitFor(
      'an inlay hint with a time at the end of each of the 6 lines of rmsnorm_naive (hintThreshold 0)',
      async () => {
        const lines = await editorLines();
        const body = ['x_sq = x * x', 'mean_sq = x_sq.mean', 'mean_eps = mean_sq + EPS', 'inv_rms = torch.rsqrt', 'x_norm = x * inv_rms', 'return x_norm * w'];
        const withTime = body.filter((code) => {
          const l = lines.find((x) => x.includes(code));
          return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
        });
        return withTime.length === body.length ? withTime : null;
      },
      20000,
    );
    const lines = await editorLines();
    for (const code of hinted) log(`hint: ${lines.find((x) => x.includes(code)).trim()}`);
    await screenshot('editor-profiled');

    const frame = await waitFor('the OpLens results panel (webview) showing aten::mul', () => findWebviewFrame('aten::mul'), 30000);
    const panelText = await frame.evaluate(() => document.body.innerText);
    if (!/aten::mean/.test(panelText) || !/aten::rsqrt/.test(panelText)) {
      throw new StepFailure(`the results panel's op table lacks aten::mean / aten::rsqrt:\n${panelText.slice(0, 1500)}`);
    }
    if (!/Self CPU/.test(panelText)) throw new StepFailure(`the results panel does not label its device column "Self CPU" on the CPU backend`);
    const rows = await frame.locator('table tr').count();
    log(`results panel: ${rows} table rows; begins: ${panelText.replace(/\s+/g, ' ').slice(0, 200)}`);
    const tabTitles = await page.locator('.tabs-container .tab').allTextContents();
    if (!tabTitles.some((t) => /OpLens/.test(t))) log(`(note: no editor tab titled OpLens; tabs: ${tabTitles.join(' | ')})`);
    await screenshot('results-panel');
    // and the op table itself, scrolled into view inside the webview
    const opsHeading = frame.getByText(/^Operators/).first();
    if (await opsHeading.count()) {
      await opsHeading.evaluate((el) => el.scrollIntoView({ block: 'start' })).catch(() => {});
      await page.waitForTimeout(300);
      await screenshot('results-op-table');
    }
  });

  await step('assert: the results page\'s roofline chart (a dot per line with work; a dot\'s hover and click)', async () => {
    const frame = await waitFor('the OpLens results panel (webview) with its roofline section', () => findWebviewFrame('Roofline'), 30000);
    const note = frame.locator('.roofline-note');
    if (await note.count()) throw new StepFailure(`the results page has no roofline chart: "${(await note.innerText()).trim()}"`);
    const chart = frame.locator('svg.roofline');
    await chart.waitFor({ timeout: 10000 });
    const dots = chart.locator('circle.dot');
    const count = await dots.count();
    const ceilings = await chart.locator('text.ceiling-label').allTextContents();
    log(`roofline: ${count} dots; ceilings: ${ceilings.join(' | ')}`);
    if (count < 1) throw new StepFailure('the roofline chart has no dots (rmsnorm_naive\'s lines all have counted work)');
    if (!ceilings.some((t) => /^memory .*GB\/s · (measured|spec)$/.test(t))) throw new StepFailure(`no labelled memory ceiling: ${ceilings.join(' | ')}`);
    if (!ceilings.some((t) => /\bfloat32\b.*FLOP\/s · (measured|spec)$/.test(t))) throw new StepFailure(`no labelled float32 ceiling: ${ceilings.join(' | ')}`);
    const bounds = await frame.locator('.chart-row .bound').allInnerTexts();
    log(`lines' bound column: ${bounds.map((b) => b.trim()).join(' | ')}`);
    await chart.evaluate((el) => el.scrollIntoView({ block: 'center' })).catch(() => {});
    // the largest dot (the hottest line with work) comes first, drawn under the smaller ones; point at
    // the first that no other covers (two lines of the same work and time overlap), read the readout
    const uncovered = await dots.evaluateAll((els) => els.findIndex((el) => {
      const r = el.getBoundingClientRect();
      return el.ownerDocument.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === el;
    }));
    const dot = dots.nth(uncovered >= 0 ? uncovered : count - 1);
    await dot.hover();
    const readout = (await frame.locator('.roofline-readout').innerText()).trim();
    log(`roofline hover: ${readout}`);
    if (!/^line \d+/.test(readout) || !/-bound|bound unknown/.test(readout) || !/% of the roofline/.test(readout)) {
      throw new StepFailure(`pointing at a dot does not name its line, bound and roofline %: "${readout}"`);
    }
    await page.waitForTimeout(300);
    await screenshot('results-roofline');
    const section = frame.locator('section', { has: frame.locator('svg.roofline') });
    const closeUp = path.join(ARTIFACTS, `${String(++shotIndex).padStart(2, '0')}-results-roofline-chart.png`);
    await section.screenshot({ path: closeUp, timeout: 15000 }).then(() => log(`screenshot ${path.relative(REPO, closeUp)}`), (e) => log(`(roofline close-up failed: ${e.message.split('\n')[0]})`));
    // a click on the dot goes to its line in the editor (the status bar's Ln follows the cursor)
    const line = Number(/^line (\d+)/.exec(readout)?.[1]);
    await dot.click();
    const at = await waitFor(
      `the editor's cursor on line ${line} after a click on its dot`,
      async () => {
        const t = (await page.locator('.statusbar').textContent()) ?? '';
        const m = /Ln (\d+)/.exec(t);
        return m && Number(m[1]) === line ? m[0] : null;
      },
      10000,
    );
    log(`dot click → ${at}`);
  });

  // ---------------------------------------------------------------- compare the three variants
  await step('Compare Functions… rmsnorm_naive, rmsnorm_fused, rmsnorm_compiled', async () => {
    // Focus the code editor, then run the command from the editor context menu.
    await rightClickOnLine('x_sq = x * x');
    await clickMenuItem(/^(OpLens: )?Compare Functions/);
    const wanted = ['rmsnorm_naive', 'rmsnorm_fused', 'rmsnorm_compiled'];
    let argsAnswered = 0;
    let picked = false;
    const deadline = Date.now() + PROFILE_TIMEOUT_MS;
    const frame = await waitFor(
      'the comparison summary with speed-ups',
      async () => {
        if (await quickInputVisible()) {
          const widget = page.locator('.quick-input-widget');
          const text = await widget.innerText();
          const rowsLoc = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
          const rowCount = await rowsLoc.count();
          if (!picked && rowCount > 0) {
            // A multi-pick of functions (rows with role=checkbox): tick the three variants and accept.
            await screenshot('compare-pick');
            const labels = (await rowsLoc.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
            log(`compare pick offers: ${labels.join(' | ')}`);
            const multi = (await rowsLoc.first().getAttribute('role')) === 'checkbox';
            if (!multi) throw new StepFailure(`the compare picker is single-choice; this harness expects a multi-pick: ${text.slice(0, 300)}`);
            for (const name of wanted) {
              // the row's label (IconLabel .label-name) is the function's name; its description follows it
              const row = rowsLoc.filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${name}\\s*$`) }) }).first();
              if (!(await row.count())) throw new StepFailure(`the compare picker does not offer ${name}: ${labels.join(' | ')}`);
              if ((await row.getAttribute('aria-checked')) !== 'true') await row.locator('.quick-input-list-label').first().click();
              await waitFor(`${name} to be ticked`, async () => (await row.getAttribute('aria-checked')) === 'true', 5000, 200);
            }
            const ticked = [];
            for (let i = 0; i < rowCount; i++) {
              if ((await rowsLoc.nth(i).getAttribute('aria-checked')) === 'true') ticked.push(labels[i]);
            }
            log(`ticked: ${ticked.join(' | ')}`);
            await screenshot('compare-picked');
            await page.keyboard.press('Enter');
            picked = true;
          } else if (rowCount === 0 && argsAnswered < 3) {
            const input = widget.locator('input');
            const value = await input.inputValue();
            log(`argument box: ${text.replace(/\s+/g, ' ').slice(0, 160)} [prefilled: ${value}]`);
            await input.fill(ARGS_EXPR);
            await page.keyboard.press('Enter');
            argsAnswered++;
          }
        }
        const errors = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = errors.find((t) => /error|failed|cannot|could not/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        const f = await findWebviewFrame('rmsnorm_fused');
        if (!f) return null;
        const body = await f.evaluate(() => document.body.innerText);
        return body.includes('rmsnorm_compiled') && /speed-?up/i.test(body) && /\d\s?×/.test(body) ? f : null;
      },
      deadline - Date.now(),
      1000,
    );
    const body = await frame.evaluate(() => document.body.innerText);
    log(`comparison: ${body.replace(/\s+/g, ' ').slice(0, 400)}`);
    // One speed-up per variant (N.NN×, the baseline 1.00×): from the table's speed-up cells when
    // the panel marks them, else from the text.
    let speedups = (await frame.locator('td.speedup').allInnerTexts()).map((t) => t.trim());
    if (!speedups.length) speedups = body.match(/\d+(?:\.\d+)?\s?×/g) || [];
    log(`speed-ups shown: ${speedups.join(', ')}`);
    const figures = speedups.map((t) => Number.parseFloat(t)).filter((x) => Number.isFinite(x) && x > 0);
    if (figures.length < wanted.length) {
      throw new StepFailure(`the comparison should show a speed-up for each of the ${wanted.length} variants, found ${JSON.stringify(speedups)}:\n${body.slice(0, 1500)}`);
    }
    await screenshot('compare-summary');
  });

  // ---------------------------------------------------------------- edit, profile again, diff
  await step(`edit rmsnorm_naive: ${EDITED_FROM} → ${EDITED_TO}, and save`, async () => {
    await clickOnLine(EDITED_FROM);
    await page.keyboard.press('Home'); // to the first character of the code
    await page.keyboard.press('Shift+End');
    await page.keyboard.insertText(EDITED_TO); // no key events: no auto-closed brackets
    await waitFor('the edited line in the editor', async () => (await editorLines()).some((l) => l.includes(EDITED_TO)), 10000);
    await page.keyboard.press('Control+S');
    await waitFor('rmsnorm.py saved (its tab not dirty)', async () => (await page.locator('.tabs-container .tab.active.dirty').count()) === 0, 10000);
    await waitFor('the totals lens of rmsnorm_naive to say stale', async () => (await codeLensTexts()).some((t) => /stale: /.test(t)), 20000);
  });

  await step('right-click in the edited rmsnorm_naive → OpLens: Profile Function, again', async () => {
    await rightClickOnLine(EDITED_TO);
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil(
      'the totals lens of the new run against the previous run (… previous run)',
      async () => (await codeLensTexts()).find((t) => /previous run/.test(t) && !/stale: /.test(t)),
    );
  });

  await step('assert: ▲ on the edited line, the lens\'s verdict, the results page\'s "vs previous run" view', async () => {
    const totals = (await codeLensTexts()).find((t) => /previous run/.test(t) && !/stale: /.test(t));
    log(`totals lens: ${totals}`);
    const rowsNow = await waitFor('the results panel', () => findWebviewFrame('vs previous run'), 30000)
      .then((f) => f.evaluate(() => document.body.innerText.split('\n').slice(0, 3).join(' ')))
      .catch(() => '');
    if (rowsNow) log(`results panel: ${rowsNow}`);
    if (!/▲ [\d.,]+(×| %) slower than previous run/.test(totals)) {
      throw new StepFailure(`the totals lens should end "▲ … slower than previous run": "${totals}"`);
    }
    const edited = await waitFor(
      `a ▲ hint at the end of the edited line (${EDITED_TO})`,
      async () => {
        const l = (await editorLines()).find((x) => x.includes(EDITED_TO));
        return l && /▲ [\d.,]+(×| %)/.test(l.slice(l.indexOf(EDITED_TO) + EDITED_TO.length)) ? l : null;
      },
      20000,
    );
    log(`hint: ${edited.trim()}`);
    const lines = await editorLines();
    for (const code of ['mean_sq = x_sq.mean', 'mean_eps = mean_sq + EPS', 'inv_rms = torch.rsqrt', 'x_norm = x * inv_rms', 'return x_norm * w']) {
      const l = lines.find((x) => x.includes(code));
      if (l) log(`hint: ${l.trim()}`);
    }
    // the editor is narrow beside the results panel: wrap its lines (View: Toggle Word Wrap, Alt+Z)
    // for the screenshot, so that the hint of the long edited line shows whole
    await clickOnLine('mean_eps = mean_sq + EPS');
    await page.keyboard.press('Alt+Z');
    await page.waitForTimeout(500);
    await screenshot('editor-diff-hints');
    await page.keyboard.press('Alt+Z');

    const frame = await waitFor('the OpLens results panel with its "vs previous run" tab', () => findWebviewFrame('vs previous run'), 30000);
    await frame.getByRole('button', { name: /vs previous run/ }).first().click();
    const row = await waitFor(
      'the "vs previous run" table with the edited line',
      async () => {
        const r = frame.locator('table.diff tbody tr', { hasText: 'range(64)' }).first();
        return (await r.count()) ? r : null;
      },
      30000,
    );
    const cells = (await row.locator('td').allInnerTexts()).map((t) => t.trim());
    log(`diff row: ${cells.join(' | ')}`);
    const verdict = (await row.locator('.verdict-tag').innerText()).trim();
    if (verdict !== 'slower') throw new StepFailure(`the edited line's verdict is "${verdict}", not slower: ${cells.join(' | ')}`);
    if (!/▲/.test(cells[4] ?? '')) throw new StepFailure(`the edited line's change should carry ▲: ${cells.join(' | ')}`);
    const summary = (await frame.locator('.diff-summary').innerText()).trim();
    log(`diff summary: ${summary}`);
    if (!/slower than previous run/.test(summary)) throw new StepFailure(`the diff's totals should say slower than previous run: ${summary}`);
    const options = await frame.locator('select option').allInnerTexts();
    log(`earlier runs in the picker: ${options.join(' | ')}`);
    // rmsnorm_naive ran twice before the edit: the first profile and the comparison
    if (options.length < 2) throw new StepFailure(`the picker should list the earlier runs of rmsnorm_naive: ${options.join(' | ')}`);
    for (const r of await frame.locator('table.diff tbody tr').allInnerTexts()) log(`  ${r.replace(/\s+/g, ' ').trim()}`);
    await page.waitForTimeout(300);
    await screenshot('results-vs-previous-run');

    // the picker: against the first profile of the session instead of the previous run
    await frame.locator('select').selectOption({ index: options.length - 1 });
    const picked = await waitFor(
      'the diff against the earliest run',
      async () => {
        const s = frame.locator('.diff-summary');
        const t = (await s.count()) ? (await s.innerText()).trim() : '';
        return /than the run of|as the run of/.test(t) ? t : null;
      },
      30000,
    );
    log(`against the earliest run: ${picked}`);
  });

}

/** Profile Function in a module of a package (tinypkg/mlp.py, which imports `.activations`): imported as the program
 * imports it, its lines profiled; then rmsnorm.py is the active editor again. */
async function packageModule() {
  await step('open tinypkg/mlp.py (a package module with a relative import)', async () => {
    await clickOnLine('mean_eps = mean_sq + EPS');
    await openFromExplorer('tinypkg');
    await waitFor('tinypkg\'s files in the explorer', async () => (await page.locator('.explorer-folders-view .label-name', { hasText: /^mlp\.py$/ }).count()) > 0, 10000);
    await openFromExplorer('mlp.py');
    await waitFor('the editor to show mlp.py with def forward', async () => (await editorLines()).some((l) => l.includes('g = swish(self.gate(x))')), 30000);
  });

  await step('right-click in GatedMLP.forward → OpLens: Profile Function; its lines get their hints', async () => {
    await rightClickOnLine('u = self.up(x)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil(
      'the CodeLens totals line over GatedMLP.forward',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      null,
      'make_inputs()',
    );
    const lines = await waitFor('a hint with a time on each of the three lines of GatedMLP.forward', async () => {
      const all = await editorLines();
      const body = ['g = swish(self.gate(x))', 'u = self.up(x)', 'return self.down(g * u)'];
      const hinted = body.map((code) => [code, all.find((x) => x.includes(code))])
        .filter(([code, l]) => l && TIME_RE.test(l.slice(l.indexOf(code) + code.length))).map(([, l]) => l);
      return hinted.length === body.length ? hinted : null;
    }, 20000);
    for (const l of lines) log(`hint: ${l.trim()}`);
    await screenshot('package-module-profiled');
  });

  await step('back to rmsnorm.py', async () => {
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}

/** The Get Started walkthrough: opened from the palette, its first step's button runs Select Python Interpreter…
 * (here, without the Python extension, OpLens's own pick); then rmsnorm.py is the active editor again. */
async function walkthrough() {
  await step('Welcome: Open Walkthrough… → Get started with OpLens; its first step\'s button runs Select Python Interpreter…', async () => {
    await clickOnLine('mean_eps = mean_sq + EPS');
    await page.keyboard.press('F1');
    await waitFor('the command palette', () => quickInputVisible(), 10000);
    await page.keyboard.type('Welcome: Open Walkthrough');
    await page.waitForTimeout(500);
    await page.keyboard.press('Enter');
    const ours = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Get started with OpLens' });
    await waitFor('"Get started with OpLens" among the walkthroughs', async () => (await ours.count()) > 0, 15000);
    await ours.first().click();
    await waitFor('the walkthrough page with its first step', async () => (await page.getByText('Choose the interpreter with your PyTorch').count()) > 0, 15000);
    await screenshot('walkthrough');
    await page.getByRole('button', { name: 'Select Interpreter' }).first().click();
    await waitFor('OpLens\'s interpreter pick', async () => (await quickInputVisible())
      && /interpreter with your PyTorch/.test(await page.locator('.quick-input-widget').innerText()), 10000);
    log(`interpreter pick: ${(await page.locator('.quick-input-widget').innerText()).replace(/\s+/g, ' ').slice(0, 200)}`);
    await screenshot('walkthrough-select-interpreter');
    await page.keyboard.press('Escape');
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}

// ------------------------------------------------------------------ Cancel on the progress notification (issue 31)
const WAITS_PY = `import time

import torch


def make_inputs(*shape):
    return torch.randn(*shape)


def waits(x):
    time.sleep(1.0)
    return x + 1
`;

/**
 * Profile Function on a function that takes a second a call: the notification shows the server's
 * stages with Cancel; Cancel stops the run (said as cancelled, no run stored) and the next Profile
 * Function on it runs to its end (the server's worker pool is usable).
 */
async function cancelProfile() {
  const runsOfWaits = () => workspaceRuns().filter((d) => d.includes('waits'));
  const toast = () => page.locator('.notifications-toasts .notification-toast', { hasText: 'profiling waits' }).first();
  await step('write waits.py (one second a call) and open it', async () => {
    fs.writeFileSync(path.join(tmpRoot, 'workspace', 'waits.py'), WAITS_PY);
    await waitFor('waits.py in the explorer', async () => (await page.locator('.explorer-folders-view .label-name', { hasText: /^waits\.py$/ }).count()) > 0, 20000);
    await openFromExplorer('waits.py');
    await waitFor('the editor to show waits.py', async () => (await editorLines()).some((l) => l.includes('def waits')), 30000);
    await waitFor('a ▶ Profile CodeLens in waits.py', async () => (await codeLensTexts()).some((t) => t.includes('Profile')), LENS_TIMEOUT_MS);
    await clearNotifications();
  });

  await step('right-click in waits → OpLens: Profile Function → the notification shows the server\'s stages and Cancel → Cancel: no run stored', async () => {
    const before = runsOfWaits();
    await rightClickOnLine('time.sleep(1.0)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const said = await answerArgumentsUntil(
      'the progress notification saying a stage of the server (warm-up or iteration k/N)',
      async () => {
        if (!(await toast().count())) return null;
        const text = (await toast().innerText()).replace(/\s+/g, ' ');
        return /warm-up|iteration \d+\/\d+/.test(text) ? text : null;
      },
      null,
      'make_inputs(4)',
    );
    log(`progress notification: ${said}`);
    await toast().hover(); // the buttons of a progress toast show on hover
    const cancel = toast().locator('.monaco-button', { hasText: 'Cancel' }).first();
    await cancel.waitFor({ state: 'visible', timeout: 5000 }).catch(() => {
      throw new StepFailure(`the progress notification has no Cancel button: ${said}`);
    });
    await screenshot('profile-cancellable');
    await cancel.click();
    const cancelled = await waitFor(
      'the message that profiling waits was cancelled',
      async () => (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).find((t) => /profiling waits was cancelled/.test(t)),
      30000,
    );
    log(`after Cancel: ${cancelled.replace(/\s+/g, ' ')}`);
    await page.waitForTimeout(2000); // a run stored late would show now
    const after = runsOfWaits();
    if (after.length !== before.length) throw new StepFailure(`a cancelled profile stored a run: ${after.filter((d) => !before.includes(d)).join(', ')}`);
    if ((await codeLensTexts()).some((t) => /\bops?\b/.test(t) && /iters?\b/.test(t))) throw new StepFailure('a totals lens over waits after Cancel');
    await screenshot('profile-cancelled');
    await clearNotifications();
  });

  await step('Profile Function on waits again: it runs to its end (the worker pool is usable after a cancel)', async () => {
    const before = runsOfWaits();
    await rightClickOnLine('time.sleep(1.0)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const totals = await answerArgumentsUntil(
      'the CodeLens totals line over waits',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      null,
      'make_inputs(4)',
    );
    const added = runsOfWaits().filter((d) => !before.includes(d));
    if (added.length !== 1) throw new StepFailure(`one new run of waits expected, found ${JSON.stringify(added)}`);
    log(`after the cancel, waits profiled: ${totals}; run ${added[0]}`);
    await screenshot('profile-after-cancel');
  });

  await step('back to rmsnorm.py', async () => {
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}

/** `oplens.importStrategy: fromEnvironment` with an interpreter that has OpLens installed (the repository's .venv): the
 * server restarts from that OpLens, not the bundled one, and Profile Function still works. */
async function fromEnvironment(python, userData) { // userData: where VS Code writes its logs
  await step('oplens.importStrategy fromEnvironment with OpLens installed in the interpreter: the server restarts from it and profiles', async () => {
    const logs = () => {
      const found = [];
      const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).forEach((e) => {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p); else if (e.name === 'OpLens.log') found.push(p);
      });
      walk(path.join(userData, 'logs'));
      return found.map((p) => fs.readFileSync(p, 'utf8')).join('\n');
    };
    // as a user sets them: the workspace's settings.json, edited and saved in the editor
    await page.keyboard.press('F1');
    await waitFor('the command palette', () => quickInputVisible(), 10000);
    await page.keyboard.type('Preferences: Open Workspace Settings (JSON)');
    await page.waitForTimeout(500);
    await page.keyboard.press('Enter');
    await waitFor('the workspace\'s settings.json in the editor', async () => /settings\.json/.test(await page.locator('.tabs-container .tab.active').first().textContent()), 15000);
    await page.locator('.monaco-editor .view-lines').filter({ visible: true }).first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(JSON.stringify({ 'oplens.importStrategy': 'fromEnvironment', 'oplens.pythonPath': python }, null, 2));
    await page.keyboard.press('Control+S');
    const started = await waitFor('the server restarted with the environment\'s OpLens', async () => {
      const line = logs().split('\n').find((l) => l.includes(`starting ${python} `));
      return line && /server ready/.test(logs().slice(logs().indexOf(line))) ? line : null;
    }, 60000, 500).catch(async (e) => {
      await screenshot('settings-json');
      throw e;
    });
    log(`after the change: ${started.replace(/^.*\] /, '').slice(0, 200)}`);
    if (/bundled OpLens/.test(started)) throw new StepFailure(`fromEnvironment still started the bundled OpLens: ${started}`);
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('return torch.rms_norm')), 30000);
    const runsBefore = new Set(workspaceRuns());
    await rightClickOnLine('return torch.rms_norm');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const lens = await answerArgumentsUntil('a new run of rmsnorm_fused and its totals lens (1 op)', async () => {
      const fresh = workspaceRuns().filter((r) => !runsBefore.has(r) && r.includes('rmsnorm_fused'));
      return fresh.length ? (await codeLensTexts()).find((t) => /\b1 ops?\b/.test(t) && /iters?\b/.test(t)) : null;
    });
    log(`rmsnorm_fused's lens from the environment's OpLens: ${lens}`);
  });
}

/** Profile Function in Program…: Block.forward captured inside train_tinyblock.py, from its launch configuration. */
async function captureInProgram() {
  await step('open tinyblock.py (the model of the workspace\'s program, train_tinyblock.py)', async () => {
    // editor group 1 (rmsnorm.py) active, so the file opens there and not beside the results panel
    await clickOnLine('mean_eps = mean_sq + EPS');
    await openFromExplorer('tinyblock.py');
    await waitFor('the editor to show tinyblock.py with def forward', async () => (await editorLines()).some((l) => l.includes('def forward(self, x')), 30000);
    const lens = await waitFor(
      `the ${PROGRAM_LENS} lens over Block.forward`,
      async () => (await codeLensTexts()).find((t) => t.includes(PROGRAM_LENS)),
      30000,
    );
    log(`lens row: ${lens}`);
  });

  await step('right-click in Block.forward → OpLens: Profile Function in Program… → the launch configuration', async () => {
    await rightClickOnLine('h = torch.nn.functional.gelu(h)');
    await screenshot('context-menu-program');
    await clickMenuItem(/^(OpLens: )?Profile Function in Program…$/);
    const widget = page.locator('.quick-input-widget');
    const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
    await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
    const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
    log(`program picker offers: ${labels.join(' | ')}`);
    if (!labels.some((l) => l.includes(LAUNCH_NAME))) throw new StepFailure(`the picker does not offer the launch configuration "${LAUNCH_NAME}": ${labels.join(' | ')}`);
    if (!labels.some((l) => l.includes('Enter a script or module'))) throw new StepFailure(`the picker has no "Enter a script or module…": ${labels.join(' | ')}`);
    if (labels.some((l) => l.includes('Attach to a process'))) throw new StepFailure(`the picker offers an attach configuration: ${labels.join(' | ')}`);
    await screenshot('program-picker');
    await rows.filter({ has: page.locator('.label-name', { hasText: LAUNCH_NAME }) }).first().locator('.quick-input-list-label').first().click();
  });

  await step('wait for the capture of Block.forward in train_tinyblock.py', async () => {
    let progressShot = false;
    const started = Date.now();
    await waitFor(
      'the CodeLens totals line over Block.forward (… ops · 5 calls)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        const progress = toasts.find((t) => /waiting|captured/i.test(t));
        if (progress && !progressShot) {
          progressShot = true;
          log(`progress: ${progress.replace(/\s+/g, ' ')}`);
          await screenshot('program-capture-progress');
        }
        return (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_5.test(t));
      },
      PROFILE_TIMEOUT_MS,
      500,
    ).catch(async (e) => {
      if (e instanceof StepFailure && /the extension reported/.test(e.message)) throw e;
      throw new StepFailure(`${e.message}; lenses seen: ${JSON.stringify(await codeLensTexts().catch(() => []))}`);
    });
    log(`captured in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  await step('assert: Block.forward\'s totals lens and per-line hints; the program\'s output in the OpLens output', async () => {
    const totals = (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_5.test(t));
    log(`totals lens: ${totals}`);
    if (!/CPU/.test(totals)) throw new StepFailure(`the totals lens does not name the CPU backend: "${totals}"`);
    if (!TIME_RE.test(totals)) throw new StepFailure(`the totals lens carries no time: "${totals}"`);
    const body = ['h = self.norm(x)', 'h = self.up(h)', 'h = torch.nn.functional.gelu(h)', 'h = self.down(h)', 'return x + h'];
    const hinted = await waitFor(
      'an inlay hint with a time at the end of each line of Block.forward',
      async () => {
        const lines = await editorLines();
        const withTime = body.filter((code) => {
          const l = lines.find((x) => x.includes(code));
          return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
        });
        return withTime.length === body.length ? withTime : null;
      },
      20000,
    );
    const lines = await editorLines();
    for (const code of hinted) log(`hint: ${lines.find((x) => x.includes(code)).trim()}`);
    await page.waitForTimeout(300);
    await screenshot('editor-program-capture');
    // the program's output comes to the OpLens output channel (window/logMessage)
    const logsDir = path.join(tmpRoot, 'user-data', 'logs');
    const output = await waitFor(
      'the program\'s "step N loss" lines in the OpLens output',
      async () => {
        for (const f of findFiles(logsDir, (p) => /oplens.*\.log$/i.test(path.relative(logsDir, p)))) {
          const found = fs.readFileSync(f, 'utf8').split('\n').find((l) => /step \d+ loss/.test(l));
          if (found) return found;
        }
        return null;
      },
      15000,
    );
    log(`program output in the OpLens output: ${output.trim()}`);
  });

  await step('Profile Function in Program… → Enter a script that calls Block.forward too few times → a partial run and the error', async () => {
    await enterProgram('h = self.up(h)', SHORT_PROGRAM, LAUNCH_NAME);
    const error = await waitFor(
      'the error that the program called Block.forward too few times',
      async () => (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).find((t) => /partial run/.test(t) && /OpLens/.test(t)),
      PROFILE_TIMEOUT_MS,
    );
    log(`error: ${error.replace(/\s+/g, ' ')}`);
    if (!/called \d+ times/.test(error)) throw new StepFailure(`the error should say how often the program called Block.forward: ${error}`);
    const totals = await waitFor(
      'the totals lens of the partial run (fewer than 5 calls)',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_PARTIAL.test(t)),
      20000,
    );
    log(`totals lens of the partial run: ${totals}`);
    if (!TIME_RE.test(totals)) throw new StepFailure(`the partial run's totals lens carries no time: "${totals}"`);
    await screenshot('program-capture-partial');
    await clearNotifications();
  });

  await step('Profile Function in Program… → Enter a script (one that waits first) → Cancel ends the program', async () => {
    await enterProgram('h = self.down(h)', SLEEPY_PROGRAM, SHORT_PROGRAM);
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'capturing Block.forward' }).first();
    await toast.waitFor({ state: 'visible', timeout: 20000 });
    const worker = await waitFor('the program running (an oplens.worker capturing Block.forward)', async () => captureWorkers()[0], 60000);
    const status = await waitFor(
      'the progress notification to say "waiting for the first call"',
      async () => ((await toast.innerText()).includes('waiting for the first call') ? toast.innerText() : null),
      30000,
    ).catch(() => null);
    log(`program running (pid ${worker.pid}); notification: ${status ? status.replace(/\s+/g, ' ').trim() : '(no "waiting for the first call")'}`);
    await screenshot('program-capture-cancellable');
    await toast.hover(); // the buttons of a progress toast show on hover
    await toast.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
    const cancelled = await waitFor(
      'the message that the capture was cancelled',
      async () => (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).find((t) => /was cancelled; the program was stopped/.test(t)),
      30000,
    );
    log(`after Cancel: ${cancelled.replace(/\s+/g, ' ')}`);
    await waitFor('the program to end', async () => !captureWorkers().some((w) => w.pid === worker.pid), 15000);
    await screenshot('program-capture-cancelled');
  });
}

// ------------------------------------------------------------------ the program overview (issue 22)
// The overview lens on a function: `CPU 12.3 % · 4.56 ms/step` (and `· total …` where it calls others).
const OVERVIEW_LENS = /CPU \d+(\.\d+)? % · [^|]+\/step/;
const LINES_LENS = '▶ lines';

const NOTEBOOK_PASSED = 'notebook.ipynb open while a real kernel ran its cells: the %oplens run of rmsnorm_naive shown on the cell that defines it (lens, a hint on each line) with the results panel opened for it, the %%oplens cell\'s own run on that cell, the lens stale once the cell was edited, and Profile Function in the cell (the statement prefilled from the notebook; without a kernel, Insert Cell with the magic; with the kernel started, the magic run in it through the Jupyter extension\'s kernel API (a stand-in over a real ipykernel) and its run shown, a raising statement\'s error said)';
// the notebook's cells the kernel runs: %load_ext, the definitions, %oplens rmsnorm_naive(x, w), the %%oplens cell
const NOTEBOOK_CELLS = '1,2,4,10';

/** examples/notebook.ipynb open in VS Code's notebook editor while a real kernel runs its cells (e2e/run_notebook.py). */
async function notebookCells(python) {
  const notebook = path.join(tmpRoot, 'workspace', 'notebook.ipynb');
  const body = ['x_sq = x * x', 'mean_sq = x_sq.mean', 'mean_eps = mean_sq + EPS', 'inv_rms = torch.rsqrt', 'x_norm = x * inv_rms', 'return x_norm * w'];
  // a line's lenses are one decoration ("▶ Profile | CPU 41.2 ms · 6 ops · 20 iters"): its totals part
  const totals = async () => (await codeLensTexts()).map((t) => /(?:stale: )?CPU [^|]*\bops?\b[^|]*\biters?\b[^|]*/.exec(t)?.[0]).filter(Boolean);

  await step('open notebook.ipynb: its cells in the notebook editor, ▶ Profile on the cell that defines rmsnorm_naive', async () => {
    await clearNotifications();
    await openFromExplorer('notebook.ipynb');
    await waitFor('a notebook cell with def rmsnorm_naive', async () => (await editorLines()).some((l) => l.includes('def rmsnorm_naive(')), 30000);
    await waitFor('the ▶ Profile lenses of the cell', async () => (await codeLensTexts()).filter((t) => t.includes('▶ Profile')).length >= 2, 60000);
    if ((await totals()).length) throw new StepFailure(`a run shown before the kernel ran: ${await totals()}`);
    await screenshot('notebook-open');
  });

  await step('a real kernel runs the cells (%oplens rmsnorm_naive(x, w), then the %%oplens cell): the run shows on the cell as the kernel writes it', async () => {
    const kernel = spawn(python, [path.join(E2E_DIR, 'run_notebook.py'), notebook, '--cells', NOTEBOOK_CELLS], {
      cwd: path.dirname(notebook),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    kernel.stdout.on('data', (d) => { output += d; });
    kernel.stderr.on('data', (d) => { output += d; });
    const done = new Promise((resolve) => kernel.on('close', resolve));
    const lens = await waitFor('the totals lens of rmsnorm_naive\'s run on its cell', async () => {
      if (kernel.exitCode !== null && kernel.exitCode !== 0) throw new StepFailure(`the kernel failed:\n${output.slice(-3000)}`);
      return (await totals())[0];
    }, PROFILE_TIMEOUT_MS, 500).catch(async (e) => {
      throw new StepFailure(`${e.message}; lenses: ${JSON.stringify(await codeLensTexts())}; kernel: ${output.slice(-2000)}`);
    });
    log(`on the cell: ${lens}`);
    if (!/\b6 ops\b/.test(lens) || !TIME_RE.test(lens)) throw new StepFailure(`rmsnorm_naive's lens should count 6 ops and carry a time: "${lens}"`);
    await waitFor('an inlay hint with a time at the end of each line of rmsnorm_naive in the cell', async () => {
      const lines = await editorLines();
      return body.every((code) => {
        const l = lines.find((x) => x.includes(code));
        return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
      });
    }, 20000);
    // the panel shows the kernel's newest run: rmsnorm_naive's, then the %%oplens cell's (<cell>) a moment later
    const shown = await waitFor('the results panel, opened for the kernel\'s run', async () => {
      const tabs = await page.locator('.tabs-container .tab').allInnerTexts();
      return tabs.map((t) => t.trim()).find((t) => /^OpLens: (rmsnorm_naive|<cell>)/.test(t));
    }, 30000, 500);
    log(`results panel: ${shown}`);
    await screenshot('notebook-profiled');
    const code = await done;
    if (code !== 0) throw new StepFailure(`the kernel failed (exit ${code}):\n${output.slice(-3000)}`);
    log(`kernel: ${output.trim().split('\n').join(' | ')}`);
    await scrollNotebook(5000); // the notebook editor draws only the cells in view
    const own = await waitFor('the %%oplens cell\'s own totals lens (its 5 iterations)', async () => {
      const found = (await totals()).find((t) => /\b5 iters\b/.test(t));
      if (!found) await scrollNotebook(2000); // a wheel the notebook did not take (a hover over the margin) is tried again
      return found;
    }, 30000)
      .catch(async (e) => {
        throw new StepFailure(`${e.message}; lenses in view: ${JSON.stringify(await codeLensTexts())}; lines: ${JSON.stringify((await editorLines()).slice(-6))}`);
      });
    log(`on the %%oplens cell: ${own}`);
    await screenshot('notebook-cell-magic');
    await scrollNotebook(-5000);
  });

  await step('edit the cell that defines rmsnorm_naive: its lens says stale, its hints go', async () => {
    await clickOnLine('x_norm = x * inv_rms');
    await page.keyboard.press('End');
    await page.keyboard.type(' * 1.0');
    const stale = await waitFor('the stale lens', async () => (await totals()).find((t) => t.startsWith('stale: ')), 20000);
    log(`after the edit: ${stale}`);
    await waitFor('no hint on the edited function', async () => {
      const lines = await editorLines();
      const l = lines.find((x) => x.includes('mean_sq = x_sq.mean'));
      return l && !TIME_RE.test(l.slice(l.indexOf('keepdim')));
    }, 20000);
    await screenshot('notebook-stale');
    await waitFor('the edit undone', async () => {
      const l = (await editorLines()).find((x) => x.includes('x_norm = x * inv_rms'));
      if (l && !/inv_rms\s*\*/.test(l)) return true;
      await page.keyboard.press('Control+Z'); // typing is undone in steps
      return null;
    }, 10000, 300);
    await waitFor('the lens fresh again', async () => (await totals()).some((t) => !t.startsWith('stale') && /\b20 iters\b/.test(t)), 20000);
  });

  await step('right-click in the cell → OpLens: Profile Function: the statement prefilled from the notebook; no kernel started yet: Insert Cell', async () => {
    await clearNotifications();
    await rightClickOnLine('x_sq = x * x');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const input = page.locator('.quick-input-widget input');
    await waitFor('the statement box', () => quickInputVisible(), 10000, 200);
    const prefilled = await input.inputValue();
    log(`statement box prefilled: ${prefilled}`);
    if (prefilled !== 'y = rmsnorm_naive(x, w)') throw new StepFailure(`the box should hold the notebook's last call of rmsnorm_naive, not "${prefilled}"`);
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'run this in a cell' }).first();
    await toast.waitFor({ state: 'visible', timeout: 20000 });
    log(`without a kernel: ${(await toast.innerText()).replace(/\s+/g, ' ')}`);
    await toast.locator('.monaco-button', { hasText: 'Insert Cell' }).first().click();
    await waitFor('a new cell with the magic at the notebook\'s end', async () => {
      await scrollNotebook(3000);
      const lines = await editorLines();
      const at = lines.findIndex((l) => l.trim() === '%load_ext oplens');
      return at >= 0 && lines[at + 1]?.trim() === '%oplens y = rmsnorm_naive(x, w)';
    }, 20000);
    await screenshot('notebook-inserted-cell');
    await scrollNotebook(-30000);
  });

  await step('with the notebook\'s kernel started (the Jupyter stand-in finds it): Profile Function runs the magic in it, the run shows', async () => {
    const kernel = spawn(python, [path.join(E2E_DIR, 'run_notebook.py'), notebook, '--cells', '1,2', '--keep-alive'], {
      cwd: path.dirname(notebook),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    kernel.stdout.on('data', (d) => { output += d; });
    kernel.stderr.on('data', (d) => { output += d; });
    try {
      await waitFor('the kernel to run the definitions and stay up', async () => {
        if (kernel.exitCode !== null) throw new StepFailure(`the kernel ended:\n${output.slice(-3000)}`);
        return output.includes('"kernel"');
      }, 120000, 300);
      const before = new Set(workspaceRuns());
      await clearNotifications();
      await rightClickOnLine('x_sq = x * x');
      await clickMenuItem(/^(OpLens: )?Profile Function$/);
      await waitFor('the statement box', () => quickInputVisible(), 10000, 200);
      const prefilled = await page.locator('.quick-input-widget input').inputValue();
      if (prefilled !== 'y = rmsnorm_naive(x, w)') throw new StepFailure(`the box holds "${prefilled}"`);
      await page.keyboard.press('Enter');
      const made = await waitFor('the kernel\'s run of the statement on disk', async () => {
        const id = workspaceRuns().find((d) => !before.has(d) && d.includes('rmsnorm_naive'));
        return id ? JSON.parse(fs.readFileSync(path.join(tmpRoot, 'workspace', '.oplens', 'runs', id, 'result.json'), 'utf8')) : null;
      }, PROFILE_TIMEOUT_MS, 500);
      if (made.config.args !== 'y = rmsnorm_naive(x, w)') throw new StepFailure(`the run's statement is "${made.config.args}"`);
      log(`the kernel ran %oplens ${made.config.args}: run ${made.run_id}, notebook ${path.basename(made.target.notebook)}`);
      const shown = await waitFor('the results panel on rmsnorm_naive\'s new run', async () => {
        const tabs = await page.locator('.tabs-container .tab').allInnerTexts();
        return tabs.map((t) => t.trim()).find((t) => /^OpLens: rmsnorm_naive/.test(t));
      }, 30000, 500);
      log(`results panel: ${shown}; lens: ${(await totals()).join(' | ')}`);

      // a statement that raises: the kernel's error, said as such
      await rightClickOnLine('x_sq = x * x');
      await clickMenuItem(/^(OpLens: )?Profile Function$/);
      await waitFor('the statement box', () => quickInputVisible(), 10000, 200);
      await page.locator('.quick-input-widget input').fill('rmsnorm_naive(x)');
      await page.keyboard.press('Enter');
      const said = await waitFor('the kernel\'s error as a notification', async () => {
        const toasts = (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
        return toasts.find((t) => /rmsnorm_naive in the kernel: TypeError/.test(t));
      }, 60000, 500);
      log(`a raising statement: ${said}`);
      await screenshot('notebook-kernel-api');
      await clearNotifications();
    } finally {
      kernel.stdin.end();
      await new Promise((resolve) => { if (kernel.exitCode !== null) resolve(); else kernel.on('close', resolve); });
    }
  });
}

/** Click the file `name` in the explorer (its label exactly, not a longer name containing it): it opens. */
async function openFromExplorer(name) {
  const exact = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  await page.locator('.explorer-folders-view .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: exact }) }).first().click();
}

/** Scroll the notebook editor by `dy` pixels (the mouse wheel over it). */
async function scrollNotebook(dy) {
  const list = page.locator('.notebook-editor .cell-list-container').filter({ visible: true }).first();
  const box = await list.boundingBox();
  await page.mouse.move(box.x + 40, box.y + box.height / 2); // over the cells' left margin
  for (let i = 0; i < 10; i++) await page.mouse.wheel(0, dy / 10);
  await page.waitForTimeout(800);
}

/** The runs on disk in the workspace (.oplens/runs/<id>/result.json), by id. */
function workspaceRuns() {
  const root = path.join(tmpRoot, 'workspace', '.oplens', 'runs');
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, 'result.json')));
}

async function programOverview() {
  await step('open train_tinyblock.py; right-click in train_step → OpLens: Program Overview… → the launch configuration', async () => {
    await clearNotifications();
    await openFromExplorer('train_tinyblock.py');
    await waitFor('the editor to show train_tinyblock.py with def train_step', async () => (await editorLines()).some((l) => l.includes('def train_step(')), 30000);
    await waitFor('the lenses of train_tinyblock.py', async () => (await codeLensTexts()).some((t) => t.includes(PROGRAM_LENS)), 30000);
    await rightClickOnLine('loss.backward()');
    await clickMenuItem(/^(OpLens: )?Program Overview \(Steps of This Function\)…$/);
    const widget = page.locator('.quick-input-widget');
    const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
    await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
    const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
    log(`program picker offers: ${labels.join(' | ')}`);
    await rows.filter({ has: page.locator('.label-name', { hasText: LAUNCH_NAME }) }).first().locator('.quick-input-list-label').first().click();
  });

  let overviewTitle = '';
  await step('wait for the overview: train_step\'s share lens, the results page with its functions and call tree', async () => {
    const started = Date.now();
    const lens = await waitFor(
      'the overview lens over train_step (CPU … % · …/step)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        return (await codeLensTexts()).find((t) => OVERVIEW_LENS.test(t));
      },
      PROFILE_TIMEOUT_MS,
      500,
    );
    log(`overview in ${((Date.now() - started) / 1000).toFixed(1)} s; train_step's lens row: ${lens}`);
    if (!lens.includes('total')) throw new StepFailure(`train_step calls Block.forward: its lens should give its total too: "${lens}"`);
    const frame = await waitFor('the results page of the overview (its call tree)', async () => findWebviewFrame('Call tree of your code'), 30000);
    const functions = (await frame.locator('table.functions tbody tr td:first-child').allTextContents()).map((t) => t.trim());
    log(`results page functions: ${functions.join(', ')}`);
    for (const fn of ['train_step', 'Block.forward']) {
      if (!functions.includes(fn)) throw new StepFailure(`the results page does not list ${fn}: ${functions.join(', ')}`);
    }
    const cells = (await frame.locator('.icicle-cell').allInnerTexts()).map((t) => t.trim()).filter(Boolean);
    log(`call tree frames: ${cells.join(', ')}`);
    if (!cells.includes('train_step')) throw new StepFailure(`the call tree has no train_step frame: ${cells.join(', ')}`);
    overviewTitle = (await frame.locator('h1').first().textContent()) ?? '';
    log(`results page: ${overviewTitle.trim()}`);
    await screenshot('overview-results');
  });

  await step('the Hot Functions view lists train_step and Block.forward with their shares', async () => {
    const header = page.locator('.pane-header', { hasText: /Hot Functions/i }).first();
    await header.waitFor({ state: 'visible', timeout: 20000 });
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
    const pane = page.locator('.pane', { has: header }).first();
    const rows = await waitFor(
      'rows in Hot Functions',
      async () => {
        const texts = (await pane.locator('.monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
        return texts.some((t) => t.startsWith('Block.forward')) && texts.some((t) => t.startsWith('train_step')) ? texts : null;
      },
      20000,
    );
    log(`Hot Functions: ${rows.join(' | ')}`);
    if (!rows.some((t) => /Block\.forward\s*\S+ \S+\/step · [\d.]+ % self · tinyblock\.py:\d+/.test(t))) throw new StepFailure(`Block.forward's row should give its share and file: ${rows.join(' | ')}`);
    await screenshot('overview-hot-functions');
  });

  await step('open tinyblock.py: Block.forward\'s overview lens; click ▶ lines and see its lines captured', async () => {
    await openFromExplorer('tinyblock.py');
    await waitFor('the editor to show tinyblock.py', async () => (await editorLines()).some((l) => l.includes('def forward(self, x')), 30000);
    const lens = await waitFor('the overview lens over Block.forward', async () => (await codeLensTexts()).find((t) => OVERVIEW_LENS.test(t) && t.includes(LINES_LENS)), 30000);
    log(`Block.forward's lens row: ${lens}`);
    const before = new Set(workspaceRuns());
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: LINES_LENS }).first().click();
    const run = await waitFor(
      'a new run of Block.forward captured in the program (▶ lines)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called|partial/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        return workspaceRuns().find((d) => !before.has(d) && d.includes('Block.forward'));
      },
      PROFILE_TIMEOUT_MS,
    );
    const result = JSON.parse(fs.readFileSync(path.join(tmpRoot, 'workspace', '.oplens', 'runs', run, 'result.json'), 'utf8'));
    if (!result.capture || result.capture.program !== 'train_tinyblock.py' && !String(result.capture.program).endsWith('train_tinyblock.py')) {
      throw new StepFailure(`▶ lines should capture Block.forward in the overview's program: ${JSON.stringify(result.capture)}`);
    }
    const body = ['h = self.norm(x)', 'h = self.up(h)', 'h = torch.nn.functional.gelu(h)', 'h = self.down(h)', 'return x + h'];
    await waitFor(
      'an inlay hint with a time at the end of each line of Block.forward',
      async () => {
        const lines = await editorLines();
        return body.every((code) => {
          const l = lines.find((x) => x.includes(code));
          return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
        });
      },
      30000,
    );
    const totals = await waitFor(
      "Block.forward's totals lens beside the overview's (… ops · 5 calls)",
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_5.test(t) && OVERVIEW_LENS.test(t)),
      30000,
    ).catch(async (e) => {
      throw new StepFailure(`${e.message}; lenses seen: ${JSON.stringify(await codeLensTexts().catch(() => []))}`);
    });
    const lenses = await codeLensTexts();
    log(`after ▶ lines: run ${run}; Block.forward's lens row: ${totals}`);
    if (!lenses.some((t) => OVERVIEW_LENS.test(t))) throw new StepFailure(`the overview's lens should stay beside the lines' run: ${lenses.join(' | ')}`);
    await screenshot('overview-lines');
    await clearNotifications();
  });
}

// ------------------------------------------------------------------ through a real SSH tunnel (issue 21)
const SLOW_PY = `import time

import torch


def make_inputs(*shape):
    return torch.randn(*shape)


def quick(x):
    return x * 2


def slow(x):
    time.sleep(0.4)
    return x + 1
`;

/** e2e/tunnel_host.py: sshd, \`oplens serve --ws\` and \`ssh -N -L\`; one JSON line per command. */
class TunnelHost {
  constructor(python, folder, workspace) {
    this.proc = spawn(python, [path.join(E2E_DIR, 'tunnel_host.py'), '--folder', folder, '--workspace', workspace], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.lines = [];
    this.waiters = [];
    let buffered = '';
    this.proc.stdout.on('data', (chunk) => {
      buffered += chunk;
      for (let i; (i = buffered.indexOf('\n')) >= 0; ) {
        const line = buffered.slice(0, i);
        buffered = buffered.slice(i + 1);
        const waiter = this.waiters.shift();
        if (waiter) waiter(JSON.parse(line));
        else this.lines.push(JSON.parse(line));
      }
    });
    this.proc.on('exit', (code) => {
      for (const w of this.waiters.splice(0)) w({ error: `tunnel_host.py exited (${code})` });
    });
  }

  next(timeoutMs = 60000) {
    if (this.lines.length) return Promise.resolve(this.lines.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new StepFailure('no answer from e2e/tunnel_host.py')), timeoutMs);
      this.waiters.push((v) => {
        clearTimeout(timer);
        resolve(v);
      });
    });
  }

  async command(cmd) {
    this.proc.stdin.write(`${cmd}\n`);
    const answer = await this.next();
    if (answer.error) throw new StepFailure(`tunnel_host.py ${cmd}: ${answer.error}`);
    return answer;
  }

  stop() {
    if (this.proc.exitCode === null) this.proc.stdin.end('stop\n');
  }
}

async function statusBarText() {
  return (await page.locator('.statusbar').textContent()) ?? '';
}

/**
 * The laptop's window (its own folder, \`oplens.server.url\` through the tunnel, the token file,
 * \`oplens.pathMappings\` to the host's folder) profiles a function; the tunnel is killed while a
 * second profile runs: the status bar says disconnected, reconnecting; a command meanwhile says it
 * did not run; the host finishes the run (the same server process); the tunnel restarted, the
 * extension reconnects by itself and shows the run that finished during the outage (not re-run).
 */
async function throughTheTunnel(python) {
  const hostFolder = path.join(tmpRoot, 'host');
  const hostWorkspace = path.join(hostFolder, 'workspace');
  const laptop = path.join(tmpRoot, 'laptop-proj');
  let host = null;
  let info = null;
  await step('start the host behind a real SSH tunnel (its sshd, oplens serve --ws, ssh -N -L)', async () => {
    fs.mkdirSync(hostWorkspace, { recursive: true, mode: 0o700 });
    fs.chmodSync(hostFolder, 0o700);
    fs.mkdirSync(path.join(laptop, '.vscode'), { recursive: true });
    for (const dir of [hostWorkspace, laptop]) fs.writeFileSync(path.join(dir, 'slow.py'), SLOW_PY);
    host = new TunnelHost(python, hostFolder, hostWorkspace);
    cleanups.push(() => host.stop());
    info = await host.next(90000);
    if (info.error) throw new StepFailure(`the SSH host cannot start: ${info.error}`);
    log(`host: oplens serve --ws (pid ${info.server_pid}) reached through: ${info.tunnel}`);
    fs.writeFileSync(path.join(laptop, '.vscode', 'settings.json'), JSON.stringify({
      'oplens.server.url': info.url,
      'oplens.server.tokenFile': info.token_file,
      'oplens.pathMappings': [{ local: laptop, host: info.host_workspace }],
    }, null, 2));
  });

  await step("open the laptop's folder in a new window and slow.py in it", async () => {
    page = await context.newPage();
    page.setDefaultTimeout(20000);
    await page.goto(`http://127.0.0.1:${csPort}/?folder=${encodeURIComponent(laptop)}`, { waitUntil: 'domcontentloaded' });
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'slow.py' }).first().click({ timeout: 60000 });
    await waitFor('the editor to show slow.py', async () => (await editorLines()).some((l) => l.includes('def slow')), 30000);
    await waitFor('a ▶ Profile CodeLens in slow.py', async () => (await codeLensTexts()).some((t) => t.includes('Profile')), LENS_TIMEOUT_MS);
  });

  const totals = async () => (await codeLensTexts()).filter((t) => /\bops?\b/.test(t) && /iters?\b/.test(t));
  await step('profile quick through the tunnel (path mappings: the laptop\'s folder is not the host\'s)', async () => {
    await rightClickOnLine('return x * 2');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil('the totals lens over quick', async () => ((await totals()).length === 1 ? true : null));
    const { runs } = await host.command('runs');
    if (runs.length !== 1) throw new StepFailure(`the host should hold the one run, it holds ${JSON.stringify(runs)}`);
    log(`through the tunnel: ${(await totals())[0]}; the run on the host: ${runs[0]}`);
    await screenshot('tunnel-profiled');
  });

  let before = null;
  await step('profile slow, and kill the ssh client while it runs', async () => {
    before = (await host.command('runs')).runs;
    await rightClickOnLine('time.sleep(0.4)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil('the status bar to say profiling', async () => (/profiling/.test(await statusBarText()) ? true : null));
    const now = await host.command('runs');
    if (now.runs.length !== before.length) throw new StepFailure('slow\'s profile finished before the tunnel could drop');
    const dropped = await host.command('drop');
    if (!dropped.server_alive) throw new StepFailure('the server died with the tunnel');
    log('the ssh client killed mid-profile');
  });

  await step('assert: "disconnected, reconnecting" in the status bar; the host finishes the run meanwhile', async () => {
    await waitFor('the status bar to say disconnected, reconnecting', async () => /disconnected, reconnecting/.test(await statusBarText()), 30000, 250);
    await screenshot('tunnel-dropped');
    const finished = await waitFor('the host to store slow\'s run', async () => {
      const r = await host.command('runs');
      return r.runs.length > before.length ? r : null;
    }, 120000, 1000);
    if (finished.runs.length !== before.length + 1) throw new StepFailure(`exactly one more run expected: ${JSON.stringify(finished.runs)}`);
    if (finished.server_pid !== info.server_pid || !finished.server_alive) throw new StepFailure('not the same server process');
    if (!/disconnected, reconnecting/.test(await statusBarText())) throw new StepFailure('reconnected with the tunnel down?');
    const toasts = (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    log(`notifications while down: ${toasts.join(' | ') || '(none)'}`);
    if (!toasts.some((t) => /dropped while profiling slow/.test(t) && /once reconnected/.test(t))) {
      throw new StepFailure(`no notification that slow's run shows once reconnected: ${toasts.join(' | ')}`);
    }
    await clearNotifications();
  });

  await step('a command while disconnected says it did not run', async () => {
    await rightClickOnLine('return x * 2');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const said = await waitFor('a notification that the command did not run', async () => {
      if (await quickInputVisible()) await page.keyboard.press('Enter'); // the arguments, remembered
      const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
      return toasts.map((t) => t.replace(/\s+/g, ' ')).find((t) => /reconnecting to ws:\/\/localhost:\d+/.test(t) && /did not run/.test(t));
    }, 30000, 500);
    log(`while disconnected: ${said}`);
    await clearNotifications();
  });

  await step('restart the tunnel: the extension reconnects by itself and shows slow\'s run (not re-run)', async () => {
    await host.command('restore');
    await waitFor('the status bar to stop saying reconnecting', async () => !/reconnecting/.test(await statusBarText()), 60000, 500);
    const lenses = await waitFor('the totals lenses over quick and slow', async () => ((await totals()).length === 2 ? totals() : null), 30000);
    log(`after the reconnect: ${lenses.join(' | ')}`);
    const after = await host.command('runs');
    if (after.runs.length !== before.length + 1) throw new StepFailure(`re-run? the host holds ${JSON.stringify(after.runs)}`);
    if (after.server_pid !== info.server_pid) throw new StepFailure('not the same server process');
    await screenshot('tunnel-reconnected');
  });
  host.stop();
}

/**
 * Right-click on the line with `textOnLine` → Profile Function in Program… → Enter a script or module…
 * → `line`; `lastUsed`: the label the picker must offer first, marked last used.
 */
async function enterProgram(textOnLine, line, lastUsed) {
  await rightClickOnLine(textOnLine);
  await clickMenuItem(/^(OpLens: )?Profile Function in Program…$/);
  const widget = page.locator('.quick-input-widget');
  const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
  await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
  const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
  log(`program picker offers: ${labels.join(' | ')}`);
  if (!(labels[0]?.includes(lastUsed) && labels[0]?.includes('last used'))) {
    throw new StepFailure(`the remembered choice "${lastUsed}" should come first, marked last used: ${labels.join(' | ')}`);
  }
  await rows.filter({ hasText: 'Enter a script or module' }).first().locator('.quick-input-list-label').first().click();
  await waitFor('the program input box', async () => (await quickInputVisible()) && (await rows.count()) === 0, 10000, 200);
  await widget.locator('input').fill(line);
  await page.keyboard.press('Enter');
  log(`entered: ${line}`);
}

/** Close every notification toast (so that the next step sees only its own). */
async function clearNotifications() {
  const toasts = page.locator('.notifications-toasts .notification-toast');
  for (let i = 0; i < 5 && (await toasts.count()) > 0; i++) {
    const toast = toasts.first();
    await toast.hover().catch(() => {});
    const clear = toast.locator('.codicon-notifications-clear').first();
    if (await clear.count()) await clear.click().catch(() => {});
    else await page.keyboard.press('Escape');
    await page.waitForTimeout(200);
  }
}

/** The OpLens worker processes capturing Block.forward for this run's workspace: `[{pid, args}]`. */
function captureWorkers() {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
    .filter((m) => m && m[2].includes('oplens.worker') && m[2].includes(tmpRoot) && /Block\.forward[^/]*\.job\.json/.test(m[2]))
    .map((m) => ({ pid: Number(m[1]), args: m[2] }));
}

/** --screenshots DIR: the first screenshot of each step named in DOC_SHOTS, copied to DIR/<name>.png. */
function copyDocShots() {
  fs.mkdirSync(opt.screenshots, { recursive: true });
  const shots = fs.readdirSync(ARTIFACTS).filter((f) => /^\d+-.*\.png$/.test(f)).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  for (const name of DOC_SHOTS) {
    const shot = shots.find((f) => f.replace(/^\d+-/, '') === `${name}.png`);
    if (shot) fs.copyFileSync(path.join(ARTIFACTS, shot), path.join(opt.screenshots, `${name}.png`));
    else log(`(--screenshots: this run took no ${name} screenshot)`);
  }
  log(`screenshots for the READMEs in ${opt.screenshots}`);
}

main()
  .then(async () => {
    if (context) await context.close().catch(() => {});
    cleanup();
    if (opt.screenshots) copyDocShots();
    log(`done in ${((Date.now() - t0) / 1000).toFixed(0)}s; screenshots in ${path.relative(process.cwd(), ARTIFACTS) || ARTIFACTS}`);
    process.exit(0);
  })
  .catch(async (e) => {
    const message = e instanceof StepFailure ? e.message : e.stack || String(e);
    console.error(`\n[e2e] FAILED at step "${currentStep}": ${message}`);
    await screenshot(`FAILED-${currentStep.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)}`);
    dumpLogs();
    // again after the logs: a CI that keeps only the tail of the output still names the step
    console.error(`\n[e2e] FAILED at step "${currentStep}": ${message.split('\n')[0]}`);
    if (context) await context.close().catch(() => {});
    cleanup();
    process.exit(1);
  });
