/**
 * The status-bar item: the backend (`NEURON`, `CUDA`, `CPU`, or what `auto` picks on the server's host,
 * `AUTO→CPU`, as backend/backendWatch.ts hears it from the server) and the server's state
 * ("disconnected, reconnecting…" while a dropped WebSocket is retried, drawn as a warning); a click
 * opens the OpLens actions, the backend pick among them.
 *
 * VS Code glue: imports `vscode`; its model is status.ts.
 */

import * as vscode from 'vscode';
import { EXTENSION_COMMANDS, STATUS_MENU_COMMAND } from '../../shared/names';
import type { BackendWatch } from '../backend/backendWatch';
import { chosenLabel } from '../backend/hostBackends';
import type { RunStore } from '../runs/runStore';
import type { OpLensServer } from '../server/server';
import type { SettingsSource } from '../settings/source';
import { statusView } from './status';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('oplens.status', vscode.StatusBarAlignment.Left, 50);
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly server: OpLensServer,
    private readonly settings: SettingsSource,
    private readonly store: RunStore,
    private readonly backends: BackendWatch,
  ) {
    this.item.name = 'OpLens';
    this.item.command = STATUS_MENU_COMMAND;
    this.subscriptions.push(
      server.onDidChangeState(() => this.update()),
      settings.onDidChange(() => this.update()),
      store.onDidChange(() => this.update()),
      backends.onDidChange(() => this.update()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.update()),
    );
    this.update();
  }

  update(): void {
    const connection = this.server.connection;
    const backend = this.settings.value.backend;
    const host = this.backends.value;
    const view = statusView({
      state: this.server.state,
      backend,
      lastDevice: this.store.newest()?.run.backend.device_label,
      hostDevice: chosenLabel(host, backend),
      backendNote: host ? host.chosen?.note || host.problem : undefined,
      connection: this.server.describeConnection(),
      interpreter: connection?.kind === 'stdio' ? `${connection.interpreter.command} (${connection.interpreter.origin})` : undefined,
      reconnect: this.server.reconnectInfo,
      detail: this.server.stateDetail,
    });
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.error
      ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : view.warning
        ? new vscode.ThemeColor('statusBarItem.warningBackground')
        : undefined;
    const python = vscode.window.visibleTextEditors.some((e) => e.document.languageId === 'python');
    if (python || view.error || view.warning || this.server.state === 'busy') {
      this.item.show();
    } else {
      this.item.hide();
    }
  }

  dispose(): void {
    this.item.dispose();
    this.subscriptions.forEach((d) => d.dispose());
  }
}

type MenuItem = vscode.QuickPickItem & ({ command: string; args?: unknown[] } | { run: () => unknown });

/**
 * The actions a click on the status item offers; while a dropped WebSocket is retried, first
 * "Reconnect Now" and "Stop Reconnecting"; while a run is under way, first "Cancel Run".
 */
export async function statusMenu(server: OpLensServer): Promise<void> {
  const reconnecting: MenuItem[] =
    server.state === 'reconnecting'
      ? [
          { label: '$(plug) Reconnect Now', description: 'try the WebSocket again at once', run: () => server.retryNow() },
          { label: '$(debug-stop) Stop Reconnecting', description: 'Restart Server connects again', run: () => server.stopReconnecting() },
        ]
      : [];
  const running: MenuItem[] =
    server.state === 'busy' ? [{ label: '$(debug-stop) Cancel Run', description: 'every profile, compare, capture and merge under way', command: EXTENSION_COMMANDS.cancelRun }] : [];
  const items: MenuItem[] = [
    ...reconnecting,
    ...running,
    { label: '$(flame) Profile Function', command: EXTENSION_COMMANDS.profileFunction },
    { label: '$(preview) Show Results', command: EXTENSION_COMMANDS.showResults },
    { label: '$(git-compare) Compare Functions…', command: EXTENSION_COMMANDS.compareFunctions },
    { label: '$(chip) Choose Backend…', description: 'auto, cpu, cuda, neuron: what this host has', command: EXTENSION_COMMANDS.chooseBackend },
    { label: '$(clear-all) Clear Annotations', command: EXTENSION_COMMANDS.clearAnnotations },
    { label: '$(debug-restart) Restart Server', command: EXTENSION_COMMANDS.restartServer },
    { label: '$(output) Show Output', command: EXTENSION_COMMANDS.showOutput },
  ];
  const picked = await vscode.window.showQuickPick(items, { placeHolder: 'OpLens' });
  if (picked && 'run' in picked) {
    await picked.run();
  } else if (picked) {
    await vscode.commands.executeCommand(picked.command, ...(picked.args ?? []));
  }
}
