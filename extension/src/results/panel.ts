/**
 * The **OpLens results** panel: one webview beside the editor showing a run (op table, per-line
 * bars, insights, artifacts, actions; and its "vs previous run" view, the server's `oplens.diff`
 * against an earlier run of the function, which the page can pick) or a comparison. The page is its own browser bundle
 * (extension/webview/results.ts); they talk only in the messages of extension/shared/messages.ts.
 *
 * A distributed run's page has a rank selector: All ranks (the merged run) or one rank, whose own
 * run (its part, `<run_dir>/ranks/<R>/`) the server reads on its host (`oplens.rankPart`,
 * ranks/rankPart.ts) and which is shown as a run of its own.
 *
 * The page is not kept alive while hidden: when it comes back it says `ready` and gets the current
 * view again, so a hidden panel costs no memory for a large run.
 *
 * VS Code glue: imports `vscode`; its models are runView.ts, runPageAnswer.ts (the server's run page), diff/diffAnswer.ts (the server's diff page) and ranks/rankPart.ts.
 */

import * as vscode from 'vscode';
import { offers } from '../../shared/backends';
import type { CompareView, FromResultsPanel, OverviewPage, ResultsPageState, RunView, ToResultsPanel } from '../../shared/messages';
import { DIFF_COMMAND, HOT_FUNCTIONS_COMMAND, OPEN_EXPLORER_COMMAND, RANK_PART_COMMAND, RESULTS_VIEW_TYPE, RUN_PAGE_COMMAND } from '../../shared/names';
import { isMerged } from '../../shared/ranks';
import { isOverview, type Run } from '../../shared/run';
import { parseDiffPage } from '../diff/diffAnswer';
import { isDrawable, physicalLines } from '../documents/documentIndex';
import type { Documents } from '../documents/documents';
import type { RpcError } from '../problems/problems';
import { describeRankPartError, rankPartRequest } from '../ranks/rankPart';
import { parseResultNotification } from '../runs/parseRun';
import type { ResultsView } from '../runs/resultsView';
import { ofLines, type RunStore, type StoredRun } from '../runs/runStore';
import { parseHotFunctions } from '../overview/hotFunctions';
import { resolveArtifact } from '../server/pathMap';
import type { OpLensServer } from '../server/server';
import { webviewHtml, webviewOptions } from './html';
import { parseRunPage } from './runPageAnswer';
import { trimmedForView } from './runView';

/** What the panel's buttons do (wired in extension.ts). */
export interface ResultsActions {
  openExplorer(runId: string): unknown;
  openTrace(runId: string): unknown;
  /** Export…: the run for Perfetto, speedscope or TensorBoard/HTA. */
  exportRun(runId: string): unknown;
  /** Open in Perfetto: the page that hands the run's trace to Perfetto UI, in the user's browser. */
  openInPerfetto(runId: string): unknown;
  /** Flame graph: the run's stacks in the bundled speedscope. */
  flameGraph(runId: string): unknown;
  compareWith(runId: string): unknown;
  rerun(runId: string): unknown;
  showRun(runId: string): unknown;
  /** A program overview's `▶ lines` (`oplens.profile`'s argument). */
  profileLines(lines: Record<string, unknown>): unknown;
}

/** `rank`: a distributed run's rank on show (its part), null for all ranks. */
type Showing = { kind: 'run'; runId: string; rank: number | null } | { kind: 'compare'; view: CompareView } | undefined;

/** A rank's part as read: the merged run it belongs to, and the part as a run of its own. */
interface Part {
  mergedId: string;
  rank: number;
  run: Run;
}

const PARTS_KEPT = 16;

export class ResultsPanel implements vscode.Disposable, ResultsView {
  private panel: vscode.WebviewPanel | undefined;
  private showing: Showing;
  private busyMessage: string | null = null;
  // Pages asked for so far: a run's page, fetched from the server, is shown only where no other was asked for meanwhile
  private asked = 0;
  private actions: ResultsActions | undefined;
  /** Rank parts read, by the part's run id (newest last). */
  private readonly parts = new Map<string, Part>();
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: RunStore,
    private readonly documents: Documents,
    private readonly server: OpLensServer,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions.push(
      store.onDidChange((change) => {
        // a newer run of the function on show replaces it
        if (change.kind !== 'added' || !this.panel || this.showing?.kind !== 'run') {
          return;
        }
        const shown = this.store.get(this.showing.runId);
        const added = change.entry;
        if (shown && shown.uri === added.uri && shown.run.target.qualname === added.run.target.qualname && added.run.run_id !== this.showing.runId) {
          void this.showRun(added.run.run_id, false);
        }
      }),
    );
  }

  setActions(actions: ResultsActions): void {
    this.actions = actions;
  }

  /** After a window reload: VS Code hands back the panel and the page's state (the run on show). */
  readonly serializer: vscode.WebviewPanelSerializer<ResultsPageState> = {
    deserializeWebviewPanel: async (panel, state) => {
      if (this.panel) {
        panel.dispose(); // one results panel
        return;
      }
      this.showing = typeof state?.runId === 'string' ? { kind: 'run', runId: state.runId, rank: typeof state.rank === 'number' ? state.rank : null } : undefined;
      this.adopt(panel);
    },
  };

  /** The run on show, if the panel shows one. */
  get currentRunId(): string | undefined {
    return this.showing?.kind === 'run' ? this.showing.runId : undefined;
  }

  get visible(): boolean {
    return this.panel?.visible ?? false;
  }

  private ensurePanel(reveal: boolean): vscode.WebviewPanel {
    if (this.panel) {
      if (reveal) {
        this.panel.reveal(this.panel.viewColumn ?? vscode.ViewColumn.Beside, true);
      }
      return this.panel;
    }
    const panel = vscode.window.createWebviewPanel(
      RESULTS_VIEW_TYPE,
      'OpLens results',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      webviewOptions(this.extensionUri),
    );
    return this.adopt(panel);
  }

  /** Give `panel` (new, or restored after a reload) the page and its message handling. */
  private adopt(panel: vscode.WebviewPanel): vscode.WebviewPanel {
    panel.webview.options = webviewOptions(this.extensionUri);
    panel.webview.html = webviewHtml(panel.webview, this.extensionUri, 'results', 'OpLens results');
    const listening = panel.webview.onDidReceiveMessage((m: FromResultsPanel) => void this.onMessage(m));
    panel.onDidDispose(() => {
      listening.dispose();
      if (this.panel === panel) {
        this.panel = undefined;
      }
    });
    this.panel = panel;
    return panel;
  }

  private post(message: ToResultsPanel): void {
    void this.panel?.webview.postMessage(message);
  }

  /**
   * A run the panel knows by id: one in the store, or a rank's part it read (under the uri of its
   * merged run), for the page's actions on what it shows.
   */
  lookup(runId: string): StoredRun | undefined {
    const stored = this.store.get(runId);
    if (stored) {
      return stored;
    }
    const part = this.parts.get(runId);
    const merged = part ? this.store.get(part.mergedId) : undefined;
    return part && merged ? { uri: merged.uri, run: part.run } : undefined;
  }

  /** The run in the store that `runId` is, or is a part of (where its lines are placed, what is diffed and run again). */
  private storedFor(runId: string): StoredRun | undefined {
    return this.store.get(runId) ?? this.store.get(this.parts.get(runId)?.mergedId ?? '');
  }

  /** The stored run's id for `runId` (a rank's part: its merged run's), what the server knows a run by. */
  private storedId(runId: string): string {
    return this.storedFor(runId)?.run.run_id ?? runId;
  }

  /**
   * Show run `runId` (it must be in the store), or rank `rank`'s part of it, or the program overview `runId`;
   * `reveal` brings the panel forward.
   */
  async showRun(runId: string, reveal: boolean, rank: number | null = null): Promise<void> {
    const ticket = ++this.asked;
    const shown = await this.pageOf(runId, rank);
    if (!shown || ticket !== this.asked) {
      return; // a page asked for meanwhile (a comparison whose runs came just before its answer) stays
    }
    this.showing = { kind: 'run', runId, rank: shown.type === 'run' ? (shown.view.ranks?.shown ?? null) : null };
    const panel = this.ensurePanel(reveal);
    panel.title = shown.type === 'overview' ? 'OpLens: program overview' : `OpLens: ${shown.view.run.target.qualname}`;
    this.post(shown);
    if (shown.type === 'run') {
      void this.sendDiff(runId);
    }
  }

  /** What the page shows of `runId`: a program overview's page, or the run's (rank `rank`'s part of it). */
  private async pageOf(runId: string, rank: number | null): Promise<Extract<ToResultsPanel, { type: 'run' | 'overview' }> | undefined> {
    const entry = this.store.get(runId);
    if (entry && isOverview(entry.run)) {
      return { type: 'overview', view: { run: entry.run, overview: await this.overviewPage(runId) } };
    }
    const view = await this.runView(runId, rank);
    return view ? { type: 'run', view } : undefined;
  }

  /** The shown run `after` against `before` (default: the function's previous run), of `by` (default: self device time), for the page's "vs previous run" view. */
  private async sendDiff(after: string, before?: string, by?: string): Promise<void> {
    let message: ToResultsPanel;
    try {
      const page = parseDiffPage(await this.server.execute(DIFF_COMMAND, { after, ...(before === undefined ? {} : { before }), ...(by ? { by } : {}) }));
      message = page.view ? { type: 'diff', runId: after, view: page.view } : { type: 'noDiff', runId: after, message: page.message };
    } catch (e) {
      this.log.warn(`results panel: diff of run ${after}${before ? ` against ${before}` : ''}: ${(e as Error).message}`);
      message = { type: 'noDiff', runId: after, message: `No comparison with an earlier run: ${(e as Error).message}` };
    }
    if (this.currentRunId === after) {
      this.post(message);
    }
  }

  showCompare(view: CompareView): void {
    this.asked++; // a run's page still being fetched (one of its variants, just stored) does not replace it
    this.showing = { kind: 'compare', view };
    const panel = this.ensurePanel(true);
    panel.title = 'OpLens: comparison';
    this.post({ type: 'compare', view });
  }

  /** Show Results: the panel with what it showed last, else the newest run. */
  async reveal(): Promise<void> {
    if (!this.showing) {
      const newest = this.store.newest();
      if (newest) {
        await this.showRun(newest.run.run_id, true);
        return;
      }
    }
    this.ensurePanel(true);
    await this.resend();
  }

  /** A profile is running (`message`) or no longer (`null`): a banner on the panel, if open. */
  busy(message: string | null): void {
    this.busyMessage = message;
    this.post({ type: 'busy', message });
  }

  private async resend(): Promise<void> {
    if (this.showing?.kind === 'run' && !this.store.has(this.showing.runId)) {
      // restored after a reload: the server still has the run on disk
      const { runId, rank } = this.showing;
      try {
        await this.actions?.showRun(runId);
        if (rank !== null && this.store.has(runId)) {
          await this.showRun(runId, false, rank); // the rank that was on show
        }
      } catch (e) {
        this.log.warn(`results panel: run ${runId}: ${(e as Error).message}`);
      }
      if (!this.store.has(runId)) {
        this.showing = undefined;
        this.post({ type: 'empty', message: `Run ${runId} is no longer available. Profile a function to see its results here.` });
      }
      return;
    }
    if (this.showing?.kind === 'run') {
      const shown = await this.pageOf(this.showing.runId, this.showing.rank);
      if (shown) {
        this.post(shown);
        if (shown.type === 'run') {
          void this.sendDiff(this.showing.runId);
        }
      }
    } else if (this.showing?.kind === 'compare') {
      this.post({ type: 'compare', view: this.showing.view });
    } else {
      this.post({ type: 'empty', message: 'Right-click inside a Python function → OpLens: Profile Function. Its results appear here.' });
    }
    this.post({ type: 'busy', message: this.busyMessage });
  }

  private async document(uri: string): Promise<vscode.TextDocument | undefined> {
    try {
      return await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
    } catch {
      return undefined;
    }
  }

  /** Where run lines are now (the server says): the shift to add, or undefined when the function changed or is gone. */
  private async placement(entry: StoredRun): Promise<{ doc?: vscode.TextDocument; shift?: number }> {
    const doc = await this.document(entry.uri);
    if (!doc) {
      return {};
    }
    const placed = await this.documents.place(doc.uri.toString(), entry.run);
    return { doc, shift: isDrawable(placed) ? placed.shift : undefined };
  }

  /** Rank `rank`'s part of the stored run `entry`, as the server reads it on its host (kept once read). */
  private async readPart(entry: StoredRun, rank: number): Promise<Run> {
    const merged = entry.run;
    const known = [...this.parts.values()].find((p) => p.mergedId === merged.run_id && p.rank === rank);
    if (known) {
      return known.run;
    }
    let answer: unknown;
    try {
      answer = await this.server.execute(RANK_PART_COMMAND, rankPartRequest(merged.run_id, rank));
    } catch (e) {
      throw new Error(describeRankPartError(e as RpcError));
    }
    const part = parseResultNotification(answer).run;
    if (isOverview(part)) {
      throw new Error(`the server's part ${part.run_id} is a program overview, not rank ${rank}'s lines`);
    }
    this.parts.delete(part.run_id);
    this.parts.set(part.run_id, { mergedId: merged.run_id, rank, run: part });
    for (const id of this.parts.keys()) {
      if (this.parts.size <= PARTS_KEPT) {
        break;
      }
      this.parts.delete(id);
    }
    return part;
  }

  private async runView(runId: string, rank: number | null = null): Promise<RunView | undefined> {
    const entry = ofLines(this.store.get(runId));
    if (!entry) {
      this.log.warn(`results panel: run ${runId} is not loaded`);
      return undefined;
    }
    const merged = isMerged(entry.run);
    let run = entry.run;
    let problem: string | undefined;
    if (merged && rank !== null) {
      try {
        run = await this.readPart(entry, rank);
      } catch (e) {
        problem = `Rank ${rank} cannot be shown: ${(e as Error).message}. All ranks are shown instead.`;
        this.log.warn(`results panel: run ${runId}: ${problem}`);
      }
    }
    const shown = run === entry.run ? null : rank;
    // the lines of a part are the merged run's: placed as it is
    const { doc, shift } = await this.placement(entry);
    const source: Record<number, string> = {};
    if (doc) {
      const lines = physicalLines(doc.getText());
      for (const stat of run.lines) {
        const text = lines[stat.line + (shift ?? 0) - 1];
        if (text !== undefined) {
          source[stat.line] = text;
        }
      }
    }
    return {
      run: trimmedForView(run),
      ...(await this.runPage(entry.run.run_id, shown, run)),
      uri: entry.uri,
      fileLabel: vscode.workspace.asRelativePath(vscode.Uri.parse(entry.uri), false),
      source,
      stale: shift === undefined,
      actions: {
        explorer: offers(run, OPEN_EXPLORER_COMMAND) && (run.artifacts.device_profile_dir !== '' || run.artifacts.profile_output_dir !== ''),
        trace: run.artifacts.trace_json !== '',
      },
      ...(merged ? { ranks: { runId: entry.run.run_id, shown, ...(problem ? { problem } : {}) } } : {}),
    };
  }

  /** The server's page of the run `runId` (or of rank `rank`'s own run in it), `run` as shown here; why not, where it cannot say. */
  private async runPage(runId: string, rank: number | null, run: Run): Promise<Pick<RunView, 'page' | 'pageProblem'>> {
    try {
      const page = parseRunPage(await this.server.execute(RUN_PAGE_COMMAND, rank === null ? { run_id: runId } : { run_id: runId, rank }));
      // its rows are the run's lines and ops, in order: a page of another version of the run cannot be drawn beside it
      if (page.run_id !== run.run_id || page.lines.length !== run.lines.length || page.ops.length !== run.ops.length) {
        throw new Error(`the server's run ${page.run_id} is not the one shown here; show it again`);
      }
      return { page };
    } catch (e) {
      this.log.warn(`results panel: run page ${runId}: ${(e as Error).message}`);
      return { pageProblem: `The server could not write this run's page: ${(e as Error).message}` };
    }
  }

  /** A program overview's functions as the server lists them for this editor (its files mapped, `▶ lines`' arguments). */
  private async overviewPage(runId: string): Promise<OverviewPage> {
    try {
      return { hot: parseHotFunctions(await this.server.execute(HOT_FUNCTIONS_COMMAND, { run_id: runId, sort: 'self' })) };
    } catch (e) {
      this.log.warn(`results panel: overview ${runId}: ${(e as Error).message}`);
      return { hot: null, problem: `The functions cannot be listed: ${(e as Error).message}` };
    }
  }

  private async onMessage(m: FromResultsPanel): Promise<void> {
    switch (m.type) {
      case 'ready':
        await this.resend();
        return;
      case 'revealLine':
        await this.revealLine(m.runId, m.line);
        return;
      case 'showRun':
        await this.actions?.showRun(m.runId);
        return;
      case 'showRank':
        await this.showRun(m.runId, false, m.rank);
        return;
      case 'diff':
        await this.sendDiff(m.after, m.before, m.by);
        return;
      case 'openExplorer':
        await this.actions?.openExplorer(this.storedId(m.runId));
        return;
      case 'openTrace':
        await this.actions?.openTrace(m.runId); // a part's own trace (the trace viewer looks it up here)
        return;
      case 'openPerfetto':
        await this.actions?.openInPerfetto(this.storedId(m.runId));
        return;
      case 'flameGraph':
        await this.actions?.flameGraph(this.storedId(m.runId));
        return;
      case 'export':
        await this.actions?.exportRun(this.storedId(m.runId));
        return;
      case 'compareWith':
        await this.actions?.compareWith(this.storedId(m.runId));
        return;
      case 'rerun':
        await this.actions?.rerun(this.storedId(m.runId));
        return;
      case 'openArtifact':
        await this.openArtifact(m.runId, m.path);
        return;
      case 'revealFunction':
        await this.revealFunction(m.uri, m.line);
        return;
      case 'profileLines':
        await this.actions?.profileLines(m.lines);
        return;
    }
  }

  /** Jump to profiled line `line` of the run's function, where it is now. */
  async revealLine(runId: string, line: number): Promise<void> {
    const entry = this.storedFor(runId);
    if (!entry) {
      return;
    }
    const { doc, shift } = await this.placement(entry);
    if (!doc) {
      void vscode.window.showWarningMessage(`OpLens: cannot open ${entry.uri}`);
      return;
    }
    if (shift === undefined) {
      vscode.window.setStatusBarMessage(`OpLens: ${entry.run.target.qualname} changed since it was profiled; the line may have moved`, 6000);
    }
    await showLine(doc, line + (shift ?? 0));
  }

  /** Open a program overview's function at its `def` (line 1-based). */
  private async revealFunction(uri: string, line: number): Promise<void> {
    const doc = await this.document(uri);
    if (!doc) {
      void vscode.window.showWarningMessage(`OpLens: cannot open ${uri} here (a path mapping, oplens.pathMappings, may be missing)`);
      return;
    }
    await showLine(doc, line);
  }

  private async openArtifact(runId: string, artifact: string): Promise<void> {
    const entry = this.lookup(runId);
    if (!entry) {
      return;
    }
    const hostPath = resolveArtifact(entry.run.run_dir, artifact);
    const local = this.server.pathMap.toLocal(hostPath);
    const uri = vscode.Uri.file(local);
    let stat: vscode.FileStat;
    try {
      stat = await vscode.workspace.fs.stat(uri);
    } catch {
      const choice = await vscode.window.showWarningMessage(
        `OpLens: ${local} is not on this machine${hostPath !== local ? ` (host path ${hostPath})` : ''}. Add a path mapping (oplens.pathMappings) or open it on the host.`,
        'Copy Path',
      );
      if (choice) {
        await vscode.env.clipboard.writeText(hostPath);
      }
      return;
    }
    if (stat.type & vscode.FileType.Directory) {
      const inWorkspace = vscode.workspace.getWorkspaceFolder(uri) !== undefined;
      await vscode.commands.executeCommand(inWorkspace ? 'revealInExplorer' : 'revealFileInOS', uri);
      return;
    }
    if (artifact === entry.run.artifacts.trace_json) {
      await this.actions?.openTrace(runId);
      return;
    }
    if (/\.(neff|ntff|pb)$/.test(local)) {
      await vscode.commands.executeCommand('revealInExplorer', uri);
      return;
    }
    await vscode.window.showTextDocument(uri, { preview: true, viewColumn: vscode.ViewColumn.One });
  }

  dispose(): void {
    this.panel?.dispose();
    this.subscriptions.forEach((d) => d.dispose());
  }
}

/** `doc` at its 1-based `line` (clamped), in the editor already showing it, else the first group. */
async function showLine(doc: vscode.TextDocument, line: number): Promise<void> {
  const range = doc.lineAt(Math.max(0, Math.min(line - 1, doc.lineCount - 1))).range;
  const existing = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === doc.uri.toString());
  const editor = await vscode.window.showTextDocument(doc, {
    viewColumn: existing?.viewColumn ?? vscode.ViewColumn.One,
    selection: new vscode.Range(range.start, range.start),
    preserveFocus: false,
  });
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}
