/**
 * Installs OpLens (the `oplens` command line, `%load_ext oplens` in notebooks) into the selected
 * interpreter's environment from the extension's bundled wheels, with no registry, then restarts the
 * server: the command "Install OpLens into the Selected Environment" and the "Install OpLens" button of
 * a server that found no OpLens (`oplens.importStrategy`: fromEnvironment).
 *
 * VS Code glue: imports `vscode`; its model is bundle.ts.
 */

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import type { Notifier } from '../problems/notify';
import { installOplensCommand } from '../problems/problems';
import type { InterpreterChooser } from '../server/interpreter';
import type { SettingsSource } from '../settings/source';
import { installArgs, pipFailure, type Bundle } from './bundle';

const INSTALL_TIMEOUT_MS = 300_000;

export class OplensInstaller {
  private running: Promise<void> | undefined;

  constructor(
    private readonly bundle: Bundle | undefined,
    private readonly interpreters: InterpreterChooser,
    private readonly settings: SettingsSource,
    private readonly notifier: Notifier,
    private readonly log: vscode.LogOutputChannel,
    private readonly restartServer: () => Promise<void>,
  ) {}

  /** Install into the interpreter the server uses (one install at a time). */
  install(): Promise<void> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<void> {
    const bundle = this.bundle;
    if (!bundle) {
      void this.notifier.show({
        severity: 'error',
        message:
          'OpLens: this copy of the extension has no bundled OpLens (it runs from a source checkout: `make package` builds one). ' +
          'Install the checkout into the interpreter with pip install -e.',
        actions: [],
      });
      return;
    }
    const interpreter = await this.interpreters.choose(this.settings.value.pythonPath, vscode.window.activeTextEditor?.document.uri);
    const python = interpreter.command;
    const args = installArgs(bundle);
    const command = installOplensCommand({ python, origin: interpreter.origin, pythonExtension: interpreter.pythonExtension, bundle });
    this.log.info(`installing OpLens ${bundle.version} into ${python} (${interpreter.origin}): ${command}`);
    const outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `OpLens: installing OpLens ${bundle.version} into ${python}…` },
      () =>
        new Promise<{ ok: boolean; output: string }>((resolve) => {
          execFile(python, args, { timeout: INSTALL_TIMEOUT_MS, windowsHide: true, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
            resolve({ ok: !error, output: `${stdout}${stderr}${error && !stdout && !stderr ? error.message : ''}` });
          });
        }),
    );
    this.log.info(outcome.output.trim());
    if (!outcome.ok) {
      void this.notifier.show({
        severity: 'error',
        message: `OpLens: installing OpLens into ${python} failed: ${pipFailure(outcome.output)}`,
        detail: outcome.output,
        actions: [
          { kind: 'showOutput', title: 'Show Output' },
          { kind: 'copy', title: 'Copy Command', text: command },
        ],
      });
      return;
    }
    await this.restartServer();
    void vscode.window.showInformationMessage(
      `OpLens ${bundle.version} is installed in ${python}: the oplens command and %load_ext oplens work in that environment. The server restarted.`,
    );
  }
}
