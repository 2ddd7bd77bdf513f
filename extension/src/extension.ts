/**
 * OpLens for VS Code: wiring only. Each concern lives in its own module: settings (config.ts),
 * interpreter choice (python.ts), the server's life (server.ts), profiling (profiling.ts),
 * comparison (compare.ts), heat (heatDecorations.ts), the results panel (resultsPanel.ts),
 * the trace viewer (traceViewer.ts), Neuron Explorer (explorer.ts), the status bar (statusBar.ts).
 */

import * as vscode from 'vscode';
import { Comparer } from './compare';
import { SettingsSource } from './config';
import { ArgumentMemory } from './core/argMemory';
import { parseResultNotification } from './core/parseRun';
import { RunStore } from './core/runStore';
import { EarlierRuns } from './earlierRuns';
import { ExplorerOpener } from './explorer';
import { HeatDecorations } from './heatDecorations';
import { Notifier } from './notify';
import { Profiler } from './profiling';
import { InterpreterChooser } from './python';
import { ResultsPanel, RESULTS_VIEW_TYPE } from './resultsPanel';
import { OpLensServer } from './server';
import { StatusBar, STATUS_MENU_COMMAND, statusMenu } from './statusBar';
import { TraceViewer } from './traceViewer';

let server: OpLensServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('OpLens', { log: true });
  const settings = new SettingsSource(log);
  const store = new RunStore();
  const memory = new ArgumentMemory(context.workspaceState);
  const notifier = new Notifier(log);
  const interpreters = new InterpreterChooser(log);

  // late-bound: the server's lens commands and results reach parts built after it
  let profiler: Profiler | undefined;
  server = new OpLensServer(context, log, settings, interpreters, notifier, {
    onResult: (params) => {
      try {
        const { uri, run } = parseResultNotification(params);
        store.add(vscode.Uri.parse(uri).toString(), run);
      } catch (e) {
        log.error(`unreadable oplens/result: ${(e as Error).message}`);
      }
    },
    profileFromLens: (arg) => profiler?.profileFromLens(arg) ?? Promise.resolve(undefined),
    showRunFromLens: (arg) => profiler?.showRunFromLens(arg) ?? Promise.resolve(undefined),
  });
  const srv = server;
  const panel = new ResultsPanel(context.extensionUri, store, srv, log);
  profiler = new Profiler(srv, store, memory, notifier, settings, panel);
  const prof = profiler;
  const comparer = new Comparer(srv, store, memory, settings, panel, prof);
  const traces = new TraceViewer(context.extensionUri, store, srv, panel, log);
  const explorer = new ExplorerOpener(srv, store, settings, notifier, prof, (runId) => traces.open(runId), log);
  notifier.setShared({ restartServer: () => srv.restart(0), setToken: () => srv.setToken() });

  const compareWith = (runId: string): Promise<void> => {
    const entry = store.get(runId);
    return comparer.compareFunctions(entry ? { uri: entry.uri, qualname: entry.run.target.qualname } : undefined);
  };
  panel.setActions({
    openExplorer: (runId) => explorer.open(runId),
    openTrace: (runId) => traces.open(runId),
    compareWith,
    rerun: (runId) => prof.rerun(runId),
    showRun: async (runId) => {
      if (!store.has(runId)) {
        await prof.fetchRun(runId);
      }
      await panel.showRun(runId, true);
    },
  });

  const clear = async (): Promise<void> => {
    const uri = vscode.window.activeTextEditor?.document.uri;
    const all = await vscode.window.showQuickPick(
      [
        { label: 'This file', all: false },
        { label: 'All files', all: true },
      ],
      { placeHolder: 'Clear OpLens annotations (runs stay on disk)' },
    );
    if (!all) {
      return;
    }
    store.clear(all.all ? undefined : uri?.toString());
    if (srv.state === 'ready' || srv.state === 'busy') {
      await srv.execute('oplens.clear', all.all || !uri ? {} : { uri: uri.toString() }).catch((e: Error) => log.warn(`clear: ${e.message}`));
    }
  };

  context.subscriptions.push(
    log,
    settings,
    interpreters,
    srv,
    panel,
    traces,
    new HeatDecorations(store, settings),
    new StatusBar(srv, settings, store),
    new EarlierRuns(srv, store, prof, log),
    vscode.commands.registerCommand('oplens.profileFunction', () => prof.profileAtCursor()),
    vscode.commands.registerCommand('oplens.profileFunctionWithArguments', () => prof.profileAtCursor({ askArgs: true })),
    vscode.commands.registerCommand('oplens.compareFunctions', () => comparer.compareFunctions()),
    vscode.commands.registerCommand('oplens.showResults', () => panel.reveal()),
    vscode.commands.registerCommand('oplens.openInExplorer', (runId?: string) => explorer.open(typeof runId === 'string' ? runId : panel.currentRunId)),
    vscode.commands.registerCommand('oplens.openTrace', (runId?: string) => traces.open(typeof runId === 'string' ? runId : undefined)),
    vscode.commands.registerCommand('oplens.clearAnnotations', clear),
    vscode.commands.registerCommand('oplens.restartServer', () => srv.restart(0)),
    vscode.commands.registerCommand('oplens.showOutput', () => log.show()),
    vscode.commands.registerCommand('oplens.setServerToken', () => srv.setToken()),
    vscode.commands.registerCommand(STATUS_MENU_COMMAND, statusMenu),
    vscode.window.registerWebviewPanelSerializer(RESULTS_VIEW_TYPE, panel.serializer),
  );

  void srv.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
