// Through a real SSH tunnel (issue 21): the laptop's window (its own folder, `oplens.server.url` through the tunnel,
// the token file, `oplens.pathMappings` to the host's folder) profiles a function; the tunnel is killed while a
// second profile runs: the status bar says disconnected, reconnecting; a command meanwhile says it did not run; the
// host finishes the run (the same server process); the tunnel restarted, the extension reconnects by itself and
// shows the run that finished during the outage (not re-run).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { E2E_DIR, LENS_TIMEOUT_MS, log, StepFailure, waitFor } from '../helpers.mjs';

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

export async function throughTheTunnel(ctx) {
  const { tmpRoot, python, csPort, cleanups } = ctx;
  let { page } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, quickInputVisible, answerArgumentsUntil, statusBarText, clearNotifications } = ctx.ui;
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
    page = ctx.page = await ctx.browser.newPage(); // the helpers' page too, and the failure's screenshot
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
    // Read while it shows: VS Code hides a toast after a while, and the host's run below may take a minute.
    let toasts = [];
    const told = await waitFor('a notification that slow\'s run shows once reconnected', async () => {
      toasts = (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
      return toasts.some((t) => /dropped while profiling slow/.test(t) && /once reconnected/.test(t));
    }, 15000, 250).catch(() => false);
    log(`notifications while down: ${toasts.join(' | ') || '(none)'}`);
    if (!told) throw new StepFailure(`no notification that slow's run shows once reconnected: ${toasts.join(' | ')}`);
    const finished = await waitFor('the host to store slow\'s run', async () => {
      const r = await host.command('runs');
      return r.runs.length > before.length ? r : null;
    }, 120000, 1000);
    if (finished.runs.length !== before.length + 1) throw new StepFailure(`exactly one more run expected: ${JSON.stringify(finished.runs)}`);
    if (finished.server_pid !== info.server_pid || !finished.server_alive) throw new StepFailure('not the same server process');
    if (!/disconnected, reconnecting/.test(await statusBarText())) throw new StepFailure('reconnected with the tunnel down?');
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
