// What the scenarios (e2e/scenarios/*.mjs) and the harness (e2e/harness.mjs) share: the paths and the constants more
// than one scenario uses, the log, StepFailure and waitFor, and the page interactions (pageHelpers: right-click on a
// line, a context menu's item, the argument box, the lenses and hints, a webview's frame, a screenshot...).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const E2E_DIR = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(E2E_DIR, '..');
export const ARTIFACTS = path.join(E2E_DIR, 'artifacts');
export const PROFILE_TIMEOUT_MS = 4 * 60 * 1000; // first profile pays server start + import torch
export const LENS_TIMEOUT_MS = 60000;
export const ARGS_EXPR = 'make_inputs(2, 64, 256)';
export const TIME_RE = /\d[\d.,]*\s?(?:µs|us|ms|s)\b/;
// Profile Function in Program…: e2e/workspace/ (copied over examples/) has train_tinyblock.py, which
// calls tinyblock.Block.forward, a launch configuration that runs it, and the capture settings.
export const PROGRAM_LENS = '▶ Profile in Program…';
export const LAUNCH_NAME = 'Train tiny block';
// a capture's totals lens counts the profiled calls (`5 calls`; older servers said `5 iters`)
export const CAPTURED_5 = /\b5 (calls|iters)\b/;

// ------------------------------------------------------------------ logging and waiting
export const t0 = Date.now();
const since = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s`;
export const log = (msg) => console.log(`[e2e ${since()}] ${msg}`);

export class StepFailure extends Error {}

/** Poll `probe` until it returns a truthy value; throw StepFailure(what) after timeoutMs. */
export async function waitFor(what, probe, timeoutMs, intervalMs = 500) {
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

export function tailFile(file, lines = 40) {
  try {
    const text = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return null;
  }
}

export function findFiles(dir, pred, out = []) {
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

// ------------------------------------------------------------------ the page
/**
 * The page interactions, acting on `ctx.page` (the window in use: the tunnel's scenario opens a second one) and
 * numbering their screenshots with `ctx.shotIndex`. The harness makes them once, as `ctx.ui`.
 */
export function pageHelpers(ctx) {
  async function screenshot(name) {
    if (!ctx.page) return null;
    const file = path.join(ARTIFACTS, `${String(++ctx.shotIndex).padStart(2, '0')}-${name}.png`);
    try {
      await ctx.page.screenshot({ path: file, timeout: 15000 });
      log(`screenshot ${path.relative(REPO, file)}`);
      return file;
    } catch (e) {
      log(`(screenshot ${name} failed: ${e.message.split('\n')[0]})`);
      return null;
    }
  }

  // Monaco renders each visible line as a .view-line; injected text (inlay hints) is part of it.
  // Monaco draws spaces as U+00A0; normalise them so code can be matched as written.
  async function editorLines() {
    const texts = await ctx.page.locator('.monaco-editor .view-lines .view-line').allTextContents();
    return texts.map((t) => t.replace(/\u00a0/g, ' '));
  }

  async function codeLensTexts() {
    return ctx.page.locator('.monaco-editor .codelens-decoration').allTextContents();
  }

  /** The visible context menu (VS Code web draws it in a shadow root; Playwright's CSS pierces it). */
  function contextMenu() {
    return ctx.page.locator('.context-view .monaco-menu');
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
    const box = await ctx.page.locator('.monaco-editor .view-lines .view-line').nth(idx - 1).boundingBox();
    // Click inside the code (a few characters in), not on whitespace past the end of the line.
    await ctx.page.mouse.click(box.x + 60, box.y + box.height / 2, { button: 'right' });
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
    return ctx.page.locator('.quick-input-widget').isVisible();
  }

  /** The frame of a webview whose document contains `text` (webviews are nested iframes in code-server). */
  async function findWebviewFrame(text) {
    for (const frame of ctx.page.frames()) {
      if (frame === ctx.page.mainFrame()) continue;
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
    const box = await ctx.page.locator('.monaco-editor .view-lines .view-line').nth(idx - 1).boundingBox();
    await ctx.page.mouse.click(box.x + 60, box.y + box.height / 2);
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
          const prompt = await ctx.page.locator('.quick-input-widget').innerText();
          log(`argument box: ${prompt.replace(/\s+/g, ' ').slice(0, 160)}`);
          if (shot) await screenshot(shot);
          await ctx.page.locator('.quick-input-widget input').fill(args);
          await ctx.page.keyboard.press('Enter');
          answered = true;
          log(`answered ${args}`);
        }
        const errors = await ctx.page.locator('.notifications-toasts .notification-toast').allInnerTexts();
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

  /** Click the file `name` in the explorer (its label exactly, not a longer name containing it): it opens. */
  async function openFromExplorer(name) {
    const exact = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
    await ctx.page.locator('.explorer-folders-view .monaco-list-row').filter({ has: ctx.page.locator('.label-name', { hasText: exact }) }).first().click();
  }

  /** Scroll the notebook editor by `dy` pixels (the mouse wheel over it). */
  async function scrollNotebook(dy) {
    const list = ctx.page.locator('.notebook-editor .cell-list-container').filter({ visible: true }).first();
    const box = await list.boundingBox();
    await ctx.page.mouse.move(box.x + 40, box.y + box.height / 2); // over the cells' left margin
    for (let i = 0; i < 10; i++) await ctx.page.mouse.wheel(0, dy / 10);
    await ctx.page.waitForTimeout(800);
  }

  /** The runs on disk in the workspace (.oplens/runs/<id>/result.json), by id. */
  function workspaceRuns() {
    const root = path.join(ctx.tmpRoot, 'workspace', '.oplens', 'runs');
    if (!fs.existsSync(root)) return [];
    return fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, 'result.json')));
  }

  async function statusBarText() {
    return (await ctx.page.locator('.statusbar').textContent()) ?? '';
  }

  /** Close every notification toast (so that the next step sees only its own). */
  async function clearNotifications() {
    const toasts = ctx.page.locator('.notifications-toasts .notification-toast');
    for (let i = 0; i < 5 && (await toasts.count()) > 0; i++) {
      const toast = toasts.first();
      await toast.hover().catch(() => {});
      const clear = toast.locator('.codicon-notifications-clear').first();
      if (await clear.count()) await clear.click().catch(() => {});
      else await ctx.page.keyboard.press('Escape');
      await ctx.page.waitForTimeout(200);
    }
  }

  return {
    screenshot, editorLines, codeLensTexts, contextMenu, rightClickOnLine, clickMenuItem, quickInputVisible, findWebviewFrame,
    clickOnLine, answerArgumentsUntil, openFromExplorer, scrollNotebook, workspaceRuns, statusBarText, clearNotifications,
  };
}

/**
 * Where the server's host has Slurm (the harness starts one), Profile Function in Program… asks where the program
 * runs after it is picked: answer "On the server's host" (`slurm`: "As a Slurm job…" and its sbatch options
 * instead); nothing to do where it does not ask (no Slurm here).
 */
export async function answerWhere(ctx, slurm = null) {
  if (ctx.slurmMissing) return;
  const { page } = ctx;
  const widget = page.locator('.quick-input-widget');
  const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
  const asked = await waitFor('the "where" picker', async () => (await rows.allInnerTexts()).some((t) => t.includes('As a Slurm job')), 20000, 200);
  if (!asked) return;
  await rows.filter({ hasText: slurm === null ? 'On the server' : 'As a Slurm job' }).first().locator('.quick-input-list-label').first().click();
  if (slurm !== null) {
    await waitFor('the sbatch options box', async () => (await widget.isVisible()) && (await rows.count()) === 0, 10000, 200);
    await widget.locator('input').fill(slurm);
    await page.keyboard.press('Enter');
  }
}
