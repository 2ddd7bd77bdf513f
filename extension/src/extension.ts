/**
 * OpLens for VS Code: wiring only. Each feature is a folder of extension/src, its pure model and its
 * VS Code glue side by side (a file's header says which it is) and its unit tests beside them:
 * settings/ (the `oplens.*` settings), backend/ (the backends of the server's host: auto's pick, the
 * backend pick, a Neuron venv offered), server/ (the server's life, interpreter, WebSocket,
 * protocol, path mappings), bundle/ (the OpLens the extension ships: the server run from it, an
 * install of it into the environment), problems/ (what went wrong and the notification of it), status/ (the
 * status bar), documents/ (what the server knows of each document), runs/ (the runs seen, read off
 * the wire), profile/ (Profile Function, argument memory), progress/ (a run's notification with
 * Cancel, Cancel Run), program/ (Profile Function in Program…),
 * compare/, results/ (the results panel and the webviews' HTML), heat/ (the gutter), diff/ ("vs
 * previous run"), ranks/ (merging the runs of several hosts, a rank's part), doctor/ (Check
 * Setup), trace/ (the trace viewer), neuron/ (Neuron Explorer), overview/ (the program overview's
 * Hot Functions view), walkthrough/ (the Get Started walkthrough's commands). VS Code glue: imports `vscode`.
 */

import * as vscode from 'vscode';
import {
  CLEAR_COMMAND,
  EXTENSION_COMMANDS,
  HOT_FUNCTIONS_COMMAND,
  PROFILE_COMMAND,
  RESULTS_VIEW_TYPE,
  SHOW_RUN_COMMAND,
  STATUS_MENU_COMMAND,
  type ExtensionCommand,
} from '../shared/names';
import { BackendWatch } from './backend/backendWatch';
import { OplensInstaller } from './bundle/installer';
import { Comparer } from './compare/compare';
import { checkSetup } from './doctor/checkSetup';
import { Documents } from './documents/documents';
import { HeatDecorations } from './heat/decorations';
import { ExplorerOpener } from './neuron/explorerOpener';
import { HotFunctionsView } from './overview/hotView';
import { NotebookProfiler } from './notebook/notebookProfiler';
import { Notifier } from './problems/notify';
import { ArgumentMemory } from './profile/argMemory';
import { Profiler } from './profile/profiler';
import { cancelRuns } from './progress/notification';
import { ProgramLenses } from './program/lens';
import { ProgramPicker } from './program/picker';
import { RunExporter } from './exports/exporter';
import { ProgramMemory, SlurmMemory } from './program/program';
import { RunMerger } from './ranks/mergeCommand';
import { ResultsPanel } from './results/panel';
import { EarlierRuns } from './runs/earlierRuns';
import { keepResults } from './runs/fromServer';
import { RunContextKeys } from './runs/runContextKeys';
import { RunStore } from './runs/runStore';
import { InterpreterChooser } from './server/interpreter';
import { OpLensServer } from './server/server';
import { SettingsSource } from './settings/source';
import { StatusBar, statusMenu } from './status/statusBar';
import { TraceViewer } from './trace/viewer';
import { FlameGraphs } from './flamegraph/flameGraph';
import { openExample } from './walkthrough/example';
import { selectInterpreter } from './walkthrough/interpreter';

let server: OpLensServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('OpLens', { log: true });
  const settings = new SettingsSource(log);
  const store = new RunStore();
  const memory = new ArgumentMemory(context.workspaceState);
  const notifier = new Notifier(log);
  const interpreters = new InterpreterChooser(log);

  // the server's notifications and lens commands reach the parts below through its events and
  // routes, all subscribed before srv.start() at the end
  const srv = (server = new OpLensServer(context, log, settings, interpreters, notifier));
  const docs = new Documents(srv, store, log);
  const panel = new ResultsPanel(context.extensionUri, store, docs, srv, log);
  const programs = new ProgramPicker(new ProgramMemory(context.workspaceState), log, new SlurmMemory(context.workspaceState));
  const prof = new Profiler(srv, store, docs, memory, notifier, settings, panel, programs, new NotebookProfiler(log));
  const comparer = new Comparer(srv, store, docs, memory, settings, panel, prof, notifier);
  const traces = new TraceViewer(context.extensionUri, store, srv, panel, log);
  const flames = new FlameGraphs(context.extensionUri, srv, panel, log);
  const explorer = new ExplorerOpener(srv, store, settings, notifier, prof, (runId) => traces.open(runId), log);
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '?');
  const backendWatch = new BackendWatch(srv, settings, context.workspaceState, log);
  const hotView = new HotFunctionsView(srv, store, log);
  const exporter = new RunExporter(srv, log);
  const merger = new RunMerger(srv, store, settings, notifier, panel, (runId) => prof.fetchRun(runId), version);
  const installer = new OplensInstaller(srv.bundle, interpreters, settings, notifier, log, () => srv.restart(0));
  notifier.setShared({ restartServer: () => srv.restart(0), setToken: () => srv.setToken(), installOplens: () => installer.install() });

  const compareWith = (runId: string): Promise<void> => {
    const entry = store.get(runId);
    return comparer.compareFunctions(entry ? { uri: entry.uri, qualname: entry.run.target.qualname } : undefined);
  };
  panel.setActions({
    openExplorer: (runId) => explorer.open(runId),
    openTrace: (runId) => traces.open(runId),
    exportRun: (runId) => exporter.export(runId),
    openInPerfetto: (runId) => exporter.openInPerfetto(runId),
    flameGraph: (runId) => flames.open(runId),
    compareWith,
    rerun: (runId) => prof.rerun(runId),
    profileLines: (lines) => prof.profileFromLens(lines),
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
    if (srv.isReady) {
      await srv.execute(CLEAR_COMMAND, all.all || !uri ? {} : { uri: uri.toString() }).catch((e: Error) => log.warn(`clear: ${e.message}`));
    }
  };

  // every command package.json contributes, and nothing else (the type asks for each of them)
  const commands: Record<ExtensionCommand, (...args: unknown[]) => unknown> = {
    profileFunction: () => prof.profileAtCursor(),
    profileFunctionWithArguments: () => prof.profileAtCursor({ askArgs: true }),
    profileInProgram: (arg) => prof.profileInProgramCommand(arg),
    compareFunctions: () => comparer.compareFunctions(),
    showResults: () => panel.reveal(),
    openInExplorer: (runId) => explorer.open(typeof runId === 'string' ? runId : panel.currentRunId),
    openTrace: (runId) => traces.open(typeof runId === 'string' ? runId : undefined),
    showFlameGraph: (runId) => flames.open(typeof runId === 'string' ? runId : undefined),
    clearAnnotations: clear,
    restartServer: () => srv.restart(0),
    showOutput: () => log.show(),
    setServerToken: () => srv.setToken(),
    checkSetup: () => checkSetup(srv, settings, notifier, log),
    installInEnvironment: () => installer.install(),
    openExample: () => openExample(context.extensionUri),
    selectInterpreter: () => selectInterpreter(),
    mergeRuns: () => merger.mergeRuns(),
    cancelRun: () => cancelRuns(srv, notifier),
    chooseBackend: () => backendWatch.choose(),
    programOverview: () => prof.overviewAtCursor(),
    sortHotFunctions: () => hotView.toggleSort(),
    refreshHotFunctions: () => hotView.refresh(),
    profileHotFunctionLines: (row) => prof.profileFromLens((row as { fn?: { lines?: unknown } } | undefined)?.fn?.lines),
  };

  context.subscriptions.push(
    log,
    settings,
    interpreters,
    srv,
    keepResults(srv, store, log, (runId) => void panel.showRun(runId, true)),
    srv.routeCommand(PROFILE_COMMAND, (arg) => prof.profileFromLens(arg)),
    srv.routeCommand(SHOW_RUN_COMMAND, (arg) => prof.showRunFromLens(arg)),
    srv.routeCommand(HOT_FUNCTIONS_COMMAND, () => hotView.reveal()),
    docs,
    panel,
    traces,
    flames,
    hotView,
    new HeatDecorations(store, docs, settings),
    new ProgramLenses(docs, srv),
    new RunContextKeys(store),
    backendWatch,
    new StatusBar(srv, settings, store, backendWatch),
    new EarlierRuns(srv, store, docs, log),
    ...Object.entries(commands).map(([name, run]) => vscode.commands.registerCommand(EXTENSION_COMMANDS[name as ExtensionCommand], run)),
    vscode.commands.registerCommand(STATUS_MENU_COMMAND, () => statusMenu(srv)),
    vscode.window.registerWebviewPanelSerializer(RESULTS_VIEW_TYPE, panel.serializer),
  );

  void srv.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
