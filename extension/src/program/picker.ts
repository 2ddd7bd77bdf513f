/**
 * Which program Profile Function in Program… runs: a QuickPick of the workspace's Python launch
 * configurations (launch.json), the `oplens.program` setting and "Enter a script or module…",
 * with the choice remembered for the workspace offered first (program.ts has the rules).
 *
 * VS Code glue: imports `vscode`; its model is program.ts.
 */

import * as os from 'node:os';
import * as vscode from 'vscode';
import { workspaceRoot } from '../settings/source';
import {
  describeProgram,
  launchChoices,
  parseProgramLine,
  programFromSetting,
  programPickItems,
  sbatchOptions,
  splitArgs,
  whereItems,
  type LaunchChoice,
  type PickItem,
  type ProgramMemory,
  type ProgramSpec,
  type SlurmMemory,
  type VariableContext,
} from './program';

/** A program to run: what to send, how to name it, and the workspace folder it belongs to (its default cwd). */
export interface PickedProgram {
  spec: ProgramSpec;
  /** The launch configuration's name, or the command line. */
  label: string;
  folder: string;
  /** Run as a Slurm job with these sbatch options (a retry keeps the choice); absent or null: on the host. */
  slurm?: string[] | null;
}

export class ProgramPicker {
  private lastSettingProblem = '';

  constructor(
    private readonly memory: ProgramMemory,
    private readonly log: vscode.LogOutputChannel,
    private readonly slurmMemory: SlurmMemory,
  ) {}

  /**
   * Where the program runs, where the server's host can submit Slurm jobs (`sbatch`: its sbatch): null on the host,
   * the sbatch options for a Slurm job (asked, the last ones offered; remembered for the workspace); undefined when
   * the user cancels.
   */
  async where(qualname: string, sbatch: string): Promise<string[] | null | undefined> {
    const remembered = this.slurmMemory.get();
    const picked = await vscode.window.showQuickPick(
      whereItems(remembered, sbatch).map((i) => ({ label: i.label, description: i.description, detail: i.detail, item: i })),
      { title: `OpLens: capture ${qualname} where?`, placeHolder: 'This host has Slurm: the program can run as a job of several nodes', ignoreFocusOut: true },
    );
    if (!picked) {
      return undefined;
    }
    if (!picked.item.slurm) {
      await this.slurmMemory.remember({ slurm: false, options: remembered?.options ?? '' });
      return null;
    }
    const value = remembered?.options ?? '-N2';
    const text = await vscode.window.showInputBox({
      title: `OpLens: sbatch options for the job that captures ${qualname}`,
      prompt: 'Nodes, partition, time, account… as sbatch takes them; OpLens runs one copy per node (srun) and merges the nodes’ parts. Remembered for this workspace.',
      placeHolder: '-N2 --partition trn2 --time 30',
      value,
      valueSelection: [0, value.length],
      ignoreFocusOut: true,
      validateInput: (t) => {
        const r = sbatchOptions(t);
        return typeof r === 'string' ? r : undefined;
      },
    });
    if (text === undefined) {
      return undefined;
    }
    const options = sbatchOptions(text);
    if (typeof options === 'string') {
      return undefined; // the box does not accept it
    }
    await this.slurmMemory.remember({ slurm: true, options: text.trim() });
    return options;
  }

  /** Ask which program runs `qualname` of `file`; undefined when the user cancels. */
  async pick(file: vscode.Uri, qualname: string): Promise<PickedProgram | undefined> {
    const folder = vscode.workspace.getWorkspaceFolder(file) ?? workspaceRoot();
    const folderPath = folder?.uri.fsPath ?? (file.scheme === 'file' ? vscode.Uri.joinPath(file, '..').fsPath : os.homedir());
    const ctx: VariableContext = { workspaceFolder: folderPath, file: file.fsPath, env: process.env, userHome: os.homedir() };

    const { choices, skipped } = launchChoices(vscode.workspace.getConfiguration('launch', folder?.uri).get('configurations'), ctx);
    for (const s of skipped) {
      this.log.debug(`launch configuration "${s.name}" not offered: ${s.why}`);
    }
    const setting = programFromSetting(vscode.workspace.getConfiguration('oplens', folder?.uri).get('program'), ctx);
    if (typeof setting === 'string') {
      this.reportSetting(setting);
    }
    const remembered = this.memory.get();
    const items = programPickItems({ launch: choices, remembered, setting: typeof setting === 'string' ? undefined : setting, folder: folderPath });

    let item: PickItem | undefined = items[0];
    if (items.length > 1) {
      const picked = await vscode.window.showQuickPick(
        items.map((i) => ({ label: i.label, description: i.description, detail: i.detail || undefined, item: i })),
        {
          title: `OpLens: capture ${qualname} inside which program?`,
          placeHolder: 'The program runs until it has called the function enough times (launch.json configurations, or enter one)',
          matchOnDescription: true,
          matchOnDetail: true,
          ignoreFocusOut: true,
        },
      );
      item = picked?.item;
    }
    if (!item) {
      return undefined;
    }
    const done = (spec: ProgramSpec, label: string): PickedProgram => ({ spec, label, folder: folderPath });
    switch (item.kind) {
      case 'launch': {
        const spec = await this.completeLaunch(item.choice, qualname, ctx);
        if (!spec) {
          return undefined;
        }
        await this.memory.remember({ kind: 'launch', name: item.choice.name });
        return done(spec, item.choice.name);
      }
      case 'setting':
        return done(item.spec, describeProgram(item.spec, folderPath));
      case 'line': {
        const spec = parseProgramLine(item.line, ctx);
        if (typeof spec !== 'string') {
          await this.memory.remember({ kind: 'line', line: item.line });
          return done(spec, describeProgram(spec, folderPath));
        }
        return this.enter(qualname, ctx, item.line).then((r) => r && done(r.spec, r.label));
      }
      case 'enter': {
        const last = remembered?.kind === 'line' ? remembered.line : '';
        return this.enter(qualname, ctx, last).then((r) => r && done(r.spec, r.label));
      }
    }
  }

  /** A launch configuration's program, with the arguments asked for (`${command:pickArgs}`) or its unresolved variables fixed by hand. */
  private async completeLaunch(choice: LaunchChoice, qualname: string, ctx: VariableContext): Promise<ProgramSpec | undefined> {
    if (choice.unresolved.length) {
      void vscode.window.showWarningMessage(
        `OpLens: the launch configuration "${choice.name}" uses ${choice.unresolved.join(', ')}, which OpLens cannot resolve: enter its program with those filled in.`,
      );
      const r = await this.enter(qualname, ctx, describeProgram(choice.spec, ctx.workspaceFolder));
      return r && { ...r.spec, cwd: r.spec.cwd ?? choice.spec.cwd, env: choice.spec.env };
    }
    if (!choice.asksArgs) {
      return choice.spec;
    }
    const args = await vscode.window.showInputBox({
      title: `OpLens: arguments for "${choice.name}"`,
      prompt: `${describeProgram(choice.spec, ctx.workspaceFolder)} … (split like a shell)`,
      ignoreFocusOut: true,
    });
    return args === undefined ? undefined : { ...choice.spec, args: splitArgs(args) };
  }

  /** The InputBox: a script or a module with its arguments; remembered. */
  private async enter(qualname: string, ctx: VariableContext, value: string): Promise<{ spec: ProgramSpec; label: string } | undefined> {
    const line = await vscode.window.showInputBox({
      title: `OpLens: the program that calls ${qualname}`,
      prompt: 'A script and its arguments, or -m package.module and its arguments, as after `python` (relative paths: to the workspace folder). Remembered for this workspace.',
      placeHolder: 'train.py --steps 30   or   -m package.module ARGS',
      value,
      valueSelection: [0, value.length],
      ignoreFocusOut: true,
      validateInput: (text) => {
        const r = parseProgramLine(text, ctx);
        return typeof r === 'string' ? r : undefined;
      },
    });
    if (line === undefined) {
      return undefined;
    }
    const spec = parseProgramLine(line, ctx);
    if (typeof spec === 'string') {
      return undefined; // the box does not accept it
    }
    await this.memory.remember({ kind: 'line', line: line.trim() });
    return { spec, label: describeProgram(spec, ctx.workspaceFolder) };
  }

  private reportSetting(problem: string): void {
    this.log.warn(`settings: ${problem}`);
    if (problem !== this.lastSettingProblem) {
      this.lastSettingProblem = problem;
      void vscode.window.showWarningMessage(`OpLens settings: ${problem}`, 'Open Settings').then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'oplens.program');
        }
      });
    }
  }
}
