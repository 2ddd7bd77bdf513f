/**
 * The backends of the server's host, asked of the server (`oplens.backends`) each time it becomes ready and
 * when `oplens.backend` changes: the status bar shows what `auto` picks there before any run. The backend
 * pick (OpLens: Choose Backend…, also the status item's menu) lists each backend, present or what it lacks,
 * and writes `oplens.backend` where it is set (the workspace's, else the user's). Where the server was
 * started here with an interpreter that cannot run a backend the request may end on, and the host has one
 * that can (a Neuron DLAMI venv with torch_neuronx), it offers to switch `oplens.pythonPath` to it.
 *
 * VS Code glue: imports `vscode`; its model is hostBackends.ts.
 */

import * as vscode from 'vscode';
import { BACKENDS, BACKENDS_COMMAND, SETTINGS_SECTION } from '../../shared/names';
import type { OpLensServer } from '../server/server';
import type { SettingsSource } from '../settings/source';
import { backendPickItems, interpreterOffer, parseHostBackends, type HostBackends } from './hostBackends';

const DECLINED_KEY = 'oplens.declinedInterpreters';

export class BackendWatch implements vscode.Disposable {
  private report: HostBackends | undefined;
  private asked: string | undefined; // the setting the report (or the request under way) is for
  private offered = false; // once per window: the offer does not come back at each restart
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly subscriptions: vscode.Disposable[];

  readonly onDidChange = this.changed.event;

  constructor(
    private readonly server: OpLensServer,
    private readonly settings: SettingsSource,
    private readonly memento: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions = [
      this.changed,
      server.onDidChangeState(() => {
        if (server.state === 'ready' && this.asked === undefined) {
          void this.refresh();
        } else if (!server.isReady && server.state !== 'reconnecting') {
          this.asked = undefined; // a new server: ask it again once ready
        }
      }),
      settings.onDidChange((s) => {
        if (s.backend !== this.asked && server.isReady) {
          void this.refresh();
        }
      }),
    ];
  }

  /** The latest answer, for the setting as it is now (else undefined). */
  get value(): HostBackends | undefined {
    return this.report?.requested === this.settings.value.backend ? this.report : undefined;
  }

  private async refresh(): Promise<void> {
    const backend = this.settings.value.backend;
    this.asked = backend;
    try {
      const report = parseHostBackends(await this.server.execute(BACKENDS_COMMAND, { backend }));
      if (this.asked !== backend) {
        return; // the setting changed meanwhile: its own answer is on the way
      }
      this.report = report;
      this.log.info(`backends of the server's host: ${report.chosen ? `${backend} → ${report.chosen.name}` : report.problem}`);
    } catch (e) {
      this.log.warn(`${BACKENDS_COMMAND}: ${(e as Error).message}`); // an older server: the status bar shows the last run's
      this.report = undefined;
    }
    this.changed.fire();
    await this.offerInterpreter();
  }

  /** The backend pick: writes the chosen one to `oplens.backend` where that is set. */
  async choose(): Promise<void> {
    const current = this.settings.value.backend;
    const items = backendPickItems(this.value, BACKENDS, current);
    const picked = await vscode.window.showQuickPick(items, {
      title: 'OpLens: where profiled functions run',
      placeHolder: this.value ? `oplens.backend is ${current}` : `oplens.backend is ${current} (the server has not said what this host has yet)`,
      matchOnDescription: true,
    });
    if (!picked || picked.backend === current) {
      return;
    }
    const config = vscode.workspace.getConfiguration(SETTINGS_SECTION);
    const inspected = config.inspect('backend');
    const target =
      inspected?.workspaceFolderValue !== undefined || inspected?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
    await config.update('backend', picked.backend, target);
  }

  private async offerInterpreter(): Promise<void> {
    const declined = this.memento.get<string[]>(DECLINED_KEY, []);
    const offer = interpreterOffer(this.value, this.server.connection?.kind === 'stdio', declined);
    if (!offer || this.offered) {
      return;
    }
    this.offered = true;
    const [best] = offer.pythons;
    const use = `Use ${best}`;
    const choose = offer.pythons.length > 1 ? 'Choose…' : undefined;
    const picked = await vscode.window.showInformationMessage(`OpLens: ${offer.message}`, use, ...(choose ? [choose] : []), 'Not Now', "Don't Ask Again");
    let python: string | undefined;
    if (picked === use) {
      python = best;
    } else if (picked === choose) {
      python = await vscode.window.showQuickPick(offer.pythons, { title: 'OpLens: the interpreter to run the server and your code with' });
    } else if (picked === "Don't Ask Again") {
      await this.memento.update(DECLINED_KEY, [...declined, ...offer.pythons]);
    }
    if (python) {
      // the server restarts with it (oplens.pythonPath is read at start)
      await vscode.workspace.getConfiguration(SETTINGS_SECTION).update('pythonPath', python, vscode.ConfigurationTarget.Workspace);
    }
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
