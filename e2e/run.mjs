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
//   --slurm-only      after opening rmsnorm.py, only the Slurm job's steps (train_step of ddp_train.py, two emulated nodes)
//   --exports-only    after profiling rmsnorm_naive, only the flame graph's and Open in Perfetto's steps
//   --screenshots DIR at the end of a passing run, copy the screenshots the READMEs show (DOC_SHOTS) to DIR as
//                     <step name>.png; `make screenshots` then makes docs/images/ of them (e2e/pictures.sh)
// Environment: OPLENS_E2E_PYTHON overrides the editor's interpreter (default: a fresh environment with torch only,
//   tests/support/torchonly.py, served from the .vsix's bundled libraries; the notebook's kernel and the tunnel's host use
//   <repo>/.venv/bin/python);
//   OPLENS_E2E_TORCH_THREADS sets OMP_NUM_THREADS for the profiled code (default 1; empty: unset).
//
// The layout: this file names the scenarios (e2e/scenarios/*.mjs, one module each) in the order they run; e2e/harness.mjs
// sets up code-server, Chromium and the workspace, runs the steps and reports a failure; e2e/helpers.mjs has the page
// interactions and waits the scenarios share. The scenarios share one context object (ctx, described in harness.mjs).
//
// Screenshots of every step go to e2e/artifacts/, code-server's and VS Code's logs (the OpLens output
// among them) to e2e/artifacts/logs/. Exit code 0 when every assertion holds; otherwise non-zero
// with the failed step, the reason, a screenshot and the tails of code-server's and the extension
// host's logs. e2e/artifacts/timings.json gets {"open_to_first_lens_s": N}: the seconds from the click
// that opens rmsnorm.py to the first "▶ Profile" CodeLens (extension activation and server start
// included), a measurement that fails the run only when no lens comes within 60 s.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, runE2E } from './harness.mjs';
import { log } from './helpers.mjs';
import { cancelProfile } from './scenarios/cancel.mjs';
import { captureInProgram } from './scenarios/capture.mjs';
import { compare } from './scenarios/compare.mjs';
import { diff } from './scenarios/diff.mjs';
import { EXPORTS_PASSED, exportViews } from './scenarios/exports.mjs';
import { importStrategy } from './scenarios/importStrategy.mjs';
import { NOTEBOOK_PASSED, notebookCells } from './scenarios/notebook.mjs';
import { openRmsnorm, smokeContextMenu } from './scenarios/open.mjs';
import { programOverview } from './scenarios/overview.mjs';
import { packageModule } from './scenarios/package.mjs';
import { profile } from './scenarios/profile.mjs';
import { SLURM_PASSED, slurmJob } from './scenarios/slurm.mjs';
import { throughTheTunnel } from './scenarios/tunnel.mjs';
import { walkthrough } from './scenarios/walkthrough.mjs';
import { WALL_PASSED, wallTime } from './scenarios/wall.mjs';

// --screenshots DIR: the screenshots e2e/pictures.sh makes the READMEs' pictures of (docs/images/)
const DOC_SHOTS = ['editor-rmsnorm', 'context-menu', 'context-menu-oplens', 'argument-box', 'editor-profiled', 'results-roofline',
  'compare-summary', 'editor-diff-hints', 'overview-hot-functions', 'notebook-profiled'];

// ------------------------------------------------------------------ arguments
const argv = process.argv.slice(2);
const opt = { vsix: null, smoke: false, keep: false, serveOnly: false, programOnly: false, tunnelOnly: false, overviewOnly: false, notebookOnly: false, slurmOnly: false, exportsOnly: false, screenshots: null };
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
  else if (a === '--slurm-only') opt.slurmOnly = true;
  else if (a === '--exports-only') opt.exportsOnly = true;
  else if (a === '--screenshots') opt.screenshots = path.resolve(argv[++i]);
  else if (a === '-h' || a === '--help') {
    const lines = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
    console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
    process.exit(0);
  } else fail('arguments', `unknown argument ${a}`);
}

// ------------------------------------------------------------------ the scenarios, in order
runE2E(opt, DOC_SHOTS, async (ctx) => {
  await openRmsnorm(ctx);
  if (opt.smoke) {
    await smokeContextMenu(ctx);
    log('smoke test passed (code-server, Chromium, workspace, editor; no extension installed)');
    return;
  }
  if (opt.tunnelOnly) {
    await throughTheTunnel(ctx);
    log('PASSED (--tunnel-only): profiled through a real SSH tunnel with path mappings; the tunnel killed mid-profile, "disconnected, reconnecting", a command refused meanwhile, the extension reconnected by itself and showed the run the host finished (not re-run)');
    return;
  }
  if (opt.overviewOnly) {
    await programOverview(ctx);
    log('PASSED (--overview-only): a program overview of train_tinyblock.py from its launch configuration (train_step\'s steps), lenses on functions in two files, the Hot Functions view, the results page\'s call tree, and ▶ lines of Block.forward captured its lines');
    return;
  }
  if (opt.notebookOnly) {
    await notebookCells(ctx);
    log(`PASSED (--notebook-only): ${NOTEBOOK_PASSED}`);
    return;
  }
  if (opt.slurmOnly) {
    const ran = await slurmJob(ctx);
    log(ran ? `PASSED (--slurm-only): ${SLURM_PASSED}` : 'PASSED (--slurm-only): nothing run, Slurm is not installed here');
    return;
  }
  if (opt.exportsOnly) {
    await profile(ctx);
    await exportViews(ctx);
    log(`PASSED (--exports-only): ${EXPORTS_PASSED}`);
    return;
  }
  if (!opt.programOnly) await profile(ctx);
  if (!opt.programOnly) await exportViews(ctx);
  if (!opt.programOnly) await compare(ctx);
  if (!opt.programOnly) await diff(ctx);
  if (!opt.programOnly) await packageModule(ctx);
  if (!opt.programOnly) await wallTime(ctx);
  if (!opt.programOnly) await cancelProfile(ctx);
  if (!opt.programOnly) await walkthrough(ctx);
  await captureInProgram(ctx);
  const slurmRan = opt.programOnly ? false : await slurmJob(ctx);
  if (!opt.programOnly) await programOverview(ctx);
  if (!opt.programOnly) await notebookCells(ctx);
  if (!opt.programOnly) await importStrategy(ctx);
  if (!opt.programOnly) await throughTheTunnel(ctx);
  log(opt.programOnly
    ? 'PASSED (--program-only): Block.forward captured inside train_tinyblock.py from its launch configuration, a partial capture reported, and a typed program cancelled'
    : `PASSED: totals lens, per-line hints, results panel with aten::mul, its roofline chart (a dot\'s hover and click), comparison with speed-ups, their intervals and verdicts, after an edit a ▲ hint, the lens verdict and the results page\'s "vs previous run" view, GatedMLP.forward of a package module with a relative import, ${WALL_PASSED}, the Get Started walkthrough and its first step's button, Block.forward captured inside train_tinyblock.py from its launch configuration, a partial capture reported, and a typed program cancelled, ${EXPORTS_PASSED}, ${slurmRan ? `${SLURM_PASSED}, ` : ''}a program overview (lenses in two files, Hot Functions, the call tree, ▶ lines), ${NOTEBOOK_PASSED}, importStrategy fromEnvironment (the interpreter's own OpLens) profiling, and through a real SSH tunnel: a profile with path mappings, the tunnel killed mid-profile and the run shown after the extension reconnected by itself`);
});
