// The e2e's harness: the processes and the run around the scenarios (e2e/scenarios/*.mjs) that e2e/run.mjs names in
// order. It checks the preconditions, makes the temporary folder (workspace, user settings, code-server's and
// Chromium's state), installs the .vsix and the Jupyter stand-in, starts code-server and Chromium, runs the steps
// (step(): the log's ▶/✓ lines), keeps the logs, and on a failure says which step failed, with a screenshot, the
// tails of code-server's and the extension host's logs and the failed step again after them; the whole run has
// a budget (TOTAL_BUDGET_MS).
//
// The scenarios get one context object, `ctx`: opt (the parsed arguments), python (the .venv's interpreter, the
// notebook's kernel and the tunnel's host), editorPython, tmpRoot, workspace, userData, csPort, browser (Playwright's
// persistent context), page (the window in use), cleanups (what a scenario started, ended in cleanup()), shotIndex,
// perfetto (the Perfetto UI stand-in: url, got) and ui (helpers.mjs's pageHelpers).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startPerfettoStandin } from './standins/perfetto.mjs';
import { ARTIFACTS, E2E_DIR, findFiles, log, pageHelpers, REPO, StepFailure, t0, tailFile, waitFor } from './helpers.mjs';

const CODE_SERVER = path.join(E2E_DIR, 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.OPLENS_E2E_CHROMIUM || '/usr/bin/chromium';
const TOTAL_BUDGET_MS = 14 * 60 * 1000;

let currentStep = 'set-up';

export function fail(step, message) {
  console.error(`\n[e2e] FAILED at step "${step}": ${message}`);
  process.exit(2);
}

export async function step(name, fn) {
  currentStep = name;
  log(`▶ ${name}`);
  const started = Date.now();
  const result = await fn();
  log(`✓ ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  return result;
}

function dumpLogs(tmpRoot) {
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
// The emulated Slurm's configuration (tests/support/slurmlab.py), where one runs: code-server, and so the OpLens server and the
// sbatch it runs, find it through SLURM_CONF.
let slurmConf = '';
// The Perfetto UI stand-in's origin (e2e/standins/perfetto.mjs): the OpLens server's Open in Perfetto page opens it.
let perfettoUi = '';

function codeServerEnv(tmpRoot) {
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
    ...(slurmConf ? { SLURM_CONF: slurmConf } : {}),
    ...(perfettoUi ? { OPLENS_PERFETTO_UI: perfettoUi } : {}),
    PASSWORD: '',
    HASHED_PASSWORD: '',
    GITHUB_TOKEN: '',
  };
}

function commonCsArgs(tmpRoot) {
  return [
    '--config', path.join(tmpRoot, 'code-server.yaml'),
    '--user-data-dir', path.join(tmpRoot, 'user-data'),
    '--extensions-dir', path.join(tmpRoot, 'extensions'),
  ];
}

/** Keep code-server's and the extension host's logs (the OpLens output channel among them) as artifacts. */
function saveLogs(tmpRoot) {
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

function cleanup(ctx) {
  const { tmpRoot, server } = ctx;
  for (const end of ctx.cleanups.splice(0)) {
    try {
      end();
    } catch {}
  }
  saveLogs(tmpRoot);
  if (server && server.exitCode === null) {
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {}
  }
  if (tmpRoot && !ctx.opt.keep) {
    fs.rmSync(tmpRoot, { recursive: true, force: true });
  } else if (tmpRoot) {
    log(`kept ${tmpRoot}`);
  }
}

// ------------------------------------------------------------------ the run
/**
 * Set up (the steps up to the workbench open in Chromium), run `scenarios(ctx)`, and end the process: exit code 0
 * when every step passed (with --screenshots DIR, `docShots` copied there first), otherwise 1 after the failure's
 * report, 3 when the whole run exceeded TOTAL_BUDGET_MS, 2 for a missing precondition.
 */
export function runE2E(opt, docShots, scenarios) {
  const ctx = {
    opt, python: null, editorPython: null, tmpRoot: null, workspace: null, userData: null, csPort: null,
    server: null, browser: null, page: null, cleanups: [], shotIndex: 0,
  };
  ctx.ui = pageHelpers(ctx);
  const { screenshot } = ctx.ui;
  setUp(ctx)
    .then(() => scenarios(ctx))
    .then(async () => {
      if (ctx.browser) await ctx.browser.close().catch(() => {});
      cleanup(ctx);
      if (opt.screenshots) copyDocShots(opt.screenshots, docShots);
      log(`done in ${((Date.now() - t0) / 1000).toFixed(0)}s; screenshots in ${path.relative(process.cwd(), ARTIFACTS) || ARTIFACTS}`);
      process.exit(0);
    })
    .catch(async (e) => {
      const message = e instanceof StepFailure ? e.message : e.stack || String(e);
      console.error(`\n[e2e] FAILED at step "${currentStep}": ${message}`);
      await screenshot(`FAILED-${currentStep.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)}`);
      dumpLogs(ctx.tmpRoot);
      // again after the logs: a CI that keeps only the tail of the output still names the step
      console.error(`\n[e2e] FAILED at step "${currentStep}": ${message.split('\n')[0]}`);
      if (ctx.browser) await ctx.browser.close().catch(() => {});
      cleanup(ctx);
      process.exit(1);
    });
}

/** The preconditions, the temporary folder, code-server with the extension, Chromium on the workspace. */
async function setUp(ctx) {
  const { opt } = ctx;
  const { screenshot } = ctx.ui;
  const overall = setTimeout(() => {
    console.error(`\n[e2e] FAILED: the whole run exceeded ${TOTAL_BUDGET_MS / 60000} minutes (at step "${currentStep}")`);
    dumpLogs(ctx.tmpRoot);
    cleanup(ctx);
    process.exit(3);
  }, TOTAL_BUDGET_MS);
  overall.unref();

  // --- preconditions, each with the command that fixes it
  if (!fs.existsSync(CODE_SERVER)) fail('preconditions', `${CODE_SERVER} is missing: run \`bash e2e/install.sh\``);
  if (!fs.existsSync(CHROMIUM)) fail('preconditions', `${CHROMIUM} is missing: run \`bash e2e/install.sh\``);
  const python = process.env.OPLENS_E2E_PYTHON || path.join(REPO, '.venv', 'bin', 'python');
  ctx.python = python;
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
  const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'oplens-e2e-'));
  const workspace = path.join(tmpRoot, 'workspace');
  const userData = path.join(tmpRoot, 'user-data');
  Object.assign(ctx, { tmpRoot, workspace, userData });
  const port = await freePort();
  ctx.csPort = port;
  log(`temp folder ${tmpRoot}; code-server port ${port}${vsix ? `; extension ${path.relative(REPO, vsix)}` : ' (smoke: no extension)'}`);

  // The editor's interpreter: a fresh environment with torch only (no OpLens, no pygls, no numpy), so the server
  // the extension starts is the one its .vsix carries (bundled/libs). OPLENS_E2E_PYTHON names another.
  let editorPython = process.env.OPLENS_E2E_PYTHON || '';
  await step('prepare workspace and settings', async () => {
    if (!editorPython) {
      const made = spawnSync(python, [path.join(REPO, 'tests', 'support', 'torchonly.py'), path.join(tmpRoot, 'torch-only')], { encoding: 'utf8', timeout: 300000 });
      if (made.status !== 0) throw new StepFailure(`could not make the torch-only environment: ${made.stderr}`);
      editorPython = made.stdout.trim();
      log(`the editor's interpreter: ${editorPython} (torch only: the extension serves it from its bundled libraries)`);
    }
    ctx.editorPython = editorPython;
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
      const r = spawnSync(CODE_SERVER, [...commonCsArgs(tmpRoot), '--force', '--install-extension', vsix], {
        env: codeServerEnv(tmpRoot),
        encoding: 'utf8',
        timeout: 120000,
      });
      const out = `${r.stdout}\n${r.stderr}`.trim();
      if (r.status !== 0 || !/successfully installed|already installed/i.test(out)) {
        throw new StepFailure(`code-server --install-extension ${vsix} failed (exit ${r.status}):\n${out}`);
      }
      const list = spawnSync(CODE_SERVER, [...commonCsArgs(tmpRoot), '--list-extensions', '--show-versions'], {
        env: codeServerEnv(tmpRoot),
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
      const r = spawnSync(CODE_SERVER, [...commonCsArgs(tmpRoot), '--force', '--install-extension', standin], { env: codeServerEnv(tmpRoot), encoding: 'utf8', timeout: 120000 });
      if (r.status !== 0) throw new StepFailure(`installing the Jupyter stand-in failed:\n${r.stdout}${r.stderr}`);
    });
  }

  await step('start a Slurm of two emulated nodes (tests/support/slurmlab.py), where Slurm is installed', async () => {
    const r = spawnSync(python, [path.join(REPO, 'tests', 'support', 'slurmlab.py'), 'start', path.join(tmpRoot, 'slurm')], { encoding: 'utf8', timeout: 120000 });
    if (r.status !== 0) throw new StepFailure(`tests/support/slurmlab.py could not start Slurm:\n${r.stdout}${r.stderr}`);
    const lab = JSON.parse(r.stdout.trim().split('\n').pop());
    if (lab.why) {
      ctx.slurmMissing = lab.why;
      log(`no Slurm: ${lab.why}`);
      return;
    }
    slurmConf = lab.conf;
    ctx.cleanups.push(() => {
      for (const pid of lab.pids) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {}
      }
    });
    log(`Slurm: slurmctld and two slurmd (n1, n2), SLURM_CONF=${slurmConf}`);
  });

  await step("serve a stand-in of Perfetto UI's message handler (e2e/standins/perfetto.mjs)", async () => {
    ctx.perfetto = await startPerfettoStandin();
    perfettoUi = ctx.perfetto.url;
    ctx.cleanups.push(() => ctx.perfetto.close());
    log(`Perfetto UI stand-in: ${perfettoUi}`);
  });

  await step('start code-server', async () => {
    const logFd = fs.openSync(path.join(tmpRoot, 'code-server.log'), 'w');
    const server = spawn(
      CODE_SERVER,
      [
        ...commonCsArgs(tmpRoot),
        '--bind-addr', `127.0.0.1:${port}`,
        '--auth', 'none',
        '--disable-telemetry',
        '--disable-update-check',
        '--disable-workspace-trust',
        '--disable-getting-started-override',
        '--ignore-last-opened',
        workspace,
      ],
      { env: codeServerEnv(tmpRoot), stdio: ['ignore', logFd, logFd], detached: true },
    );
    ctx.server = server;
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
    const context = await chromium.launchPersistentContext(path.join(tmpRoot, 'chromium-profile'), {
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
    ctx.browser = context;
    const page = context.pages()[0] ?? (await context.newPage());
    ctx.page = page;
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
}

/** --screenshots DIR: the first screenshot of each step named in `docShots` (run.mjs's DOC_SHOTS), copied to DIR/<name>.png. */
function copyDocShots(dir, docShots) {
  fs.mkdirSync(dir, { recursive: true });
  const shots = fs.readdirSync(ARTIFACTS).filter((f) => /^\d+-.*\.png$/.test(f)).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  for (const name of docShots) {
    const shot = shots.find((f) => f.replace(/^\d+-/, '') === `${name}.png`);
    if (shot) fs.copyFileSync(path.join(ARTIFACTS, shot), path.join(dir, `${name}.png`));
    else log(`(--screenshots: this run took no ${name} screenshot)`);
  }
  log(`screenshots for the READMEs in ${dir}`);
}

