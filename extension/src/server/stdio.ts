/**
 * The server started here: `python -m oplens serve --stdio` with the chosen interpreter, the
 * extension's bundled OpLens first on its path unless `oplens.importStrategy` says `fromEnvironment`
 * (bundle.ts), after a quick check that the interpreter has oplens and torch (the preflight, which
 * says what to install when not). The child process, its exit and the tail of its stderr are kept
 * here, for the message when it fails to start or dies.
 *
 * VS Code glue: imports `vscode`; OpLensServer (server.ts) starts and stops it.
 */

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ServerOptions } from 'vscode-languageclient/node';
import { BUNDLED_LIBS_ENV, serverEnvironment, type Bundle } from '../bundle/bundle';
import type { Notifier } from '../problems/notify';
import { describeServerExit, diagnosePreflight, PREFLIGHT_SCRIPT, type InstallHints, type PreflightOutcome, type Problem } from '../problems/problems';
import { serverArgs } from '../settings/settings';
import { expandPath, workspaceRoot, type SettingsSource } from '../settings/source';
import type { Interpreter, InterpreterChooser } from './interpreter';

const STDERR_TAIL = 8_000;

/** `bundled`: the server runs from the extension's bundled OpLens (else the interpreter's own). */
export type StdioConnection = { kind: 'stdio'; interpreter: Interpreter; cwd: string; bundled: boolean };

type Exit = { code: number | null; signal: string | null };

export class StdioLauncher {
  private child: ChildProcess | undefined;
  private childExit: Promise<Exit> | undefined;
  private stderrTail = '';
  /** What to install, for the interpreter of the latest start (also the protocol check's advice). */
  hints: InstallHints | undefined;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly settings: SettingsSource,
    private readonly interpreters: InterpreterChooser,
    private readonly notifier: Notifier,
    private readonly bundle: Bundle | undefined,
    private readonly restart: () => Promise<void>,
  ) {}

  /** A start begins: the stderr of the one before is not its. */
  forgetStderr(): void {
    this.stderrTail = '';
  }

  /**
   * The interpreter chosen and checked; how to start the server with it, or no `serverOptions`
   * when it cannot run it (the preflight said why).
   */
  async prepare(): Promise<{ connection: StdioConnection; serverOptions?: ServerOptions }> {
    const s = this.settings.value;
    const resource = vscode.window.activeTextEditor?.document.uri;
    const interpreter = await this.interpreters.choose(s.pythonPath, resource);
    const cwd = workspaceRoot()?.uri.fsPath ?? (resource?.scheme === 'file' ? path.dirname(resource.fsPath) : os.homedir());
    const libs = this.bundledLibs(s.importStrategy);
    const env = serverEnvironment(process.env, libs);
    const connection: StdioConnection = { kind: 'stdio', interpreter, cwd, bundled: libs !== undefined };
    this.hints = await this.installHints(interpreter, libs !== undefined);
    if (!(await this.preflight(interpreter, cwd, this.hints, env))) {
      return { connection };
    }
    return { connection, serverOptions: () => Promise.resolve(this.spawnServer(interpreter, cwd, env)) };
  }

  /** Why the process ended (its exit, waited for 1.5 s at most, and its stderr; `fallback` where it wrote none). */
  async describeExit(fallback?: string): Promise<Problem> {
    const exit = await Promise.race([
      this.childExit ?? Promise.resolve({ code: null, signal: null }),
      new Promise<Exit>((resolve) => setTimeout(() => resolve({ code: null, signal: null }), 1500)),
    ]);
    return describeServerExit(exit.code, exit.signal, fallback === undefined ? this.stderrTail : this.stderrTail || fallback, this.hints);
  }

  /** Let go of the process; the returned function ends it (SIGTERM, then SIGKILL after 3 s) once the client has stopped. */
  detach(): () => void {
    const child = this.child;
    this.child = undefined;
    return () => {
      if (child && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.once('exit', () => clearTimeout(timer));
      }
    };
  }

  /** The bundled libraries the server runs from, or undefined: the interpreter's own OpLens. */
  private bundledLibs(strategy: 'useBundled' | 'fromEnvironment'): string | undefined {
    if (strategy === 'fromEnvironment') {
      return undefined;
    }
    if (!this.bundle) {
      this.log.warn("oplens.importStrategy is useBundled, but this copy of the extension has no bundled OpLens: using the interpreter's own");
    }
    return this.bundle?.libs;
  }

  private async installHints(interpreter: Interpreter, bundled: boolean): Promise<InstallHints> {
    const root = workspaceRoot()?.uri.fsPath;
    let sourceTree: string | undefined;
    if (root) {
      try {
        const pyproject = await fs.readFile(path.join(root, 'pyproject.toml'), 'utf8');
        if (/^name\s*=\s*"oplens"/m.test(pyproject)) {
          sourceTree = root;
        }
      } catch {
        // not the OpLens source tree
      }
    }
    return {
      python: interpreter.command,
      origin: interpreter.origin,
      pythonExtension: interpreter.pythonExtension,
      sourceTree,
      bundle: this.bundle && { wheels: this.bundle.wheels, version: this.bundle.version },
      bundled,
    };
  }

  /** Can this interpreter run the server (oplens) and its worker (torch)? Says what to do when not. */
  private async preflight(interpreter: Interpreter, cwd: string, hints: InstallHints, env: NodeJS.ProcessEnv): Promise<boolean> {
    const outcome = await new Promise<PreflightOutcome>((resolve) => {
      execFile(interpreter.command, ['-c', PREFLIGHT_SCRIPT], { cwd, env, timeout: 30_000, windowsHide: true }, (error, stdout, stderr) => {
        const err = error as (NodeJS.ErrnoException & { killed?: boolean; code?: string | number }) | null;
        if (err && typeof err.code === 'string') {
          resolve({ spawnError: err.code, exitCode: null, stdout, stderr });
        } else {
          resolve({ exitCode: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr, timedOut: err?.killed === true });
        }
      });
    });
    const verdict = diagnosePreflight(outcome, hints);
    if (verdict.report) {
      this.log.info(
        `interpreter ${interpreter.command} (${interpreter.origin}): Python ${verdict.report.python}, ` +
          `oplens ${verdict.report.oplens ?? 'missing'}${hints.bundled ? ' (bundled)' : ''}, torch ${verdict.report.torch ?? 'missing'}`,
      );
    }
    if (verdict.problem) {
      void this.notifier.show(verdict.problem, { restartServer: this.restart });
    }
    return !verdict.fatal;
  }

  private spawnServer(interpreter: Interpreter, cwd: string, env: NodeJS.ProcessEnv): ChildProcess {
    const args = serverArgs(this.settings.value);
    const runs = this.settings.value.runsDirectory;
    if (runs) {
      args[args.indexOf('--out') + 1] = expandPath(runs);
    }
    const libs = env[BUNDLED_LIBS_ENV];
    this.log.info(`starting ${interpreter.command} ${args.join(' ')} in ${cwd}${libs ? ` with the bundled OpLens (${libs})` : ''}`);
    const child = spawn(interpreter.command, args, {
      cwd,
      env: { ...env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' },
      stdio: 'pipe',
      windowsHide: true,
    });
    this.child = child;
    this.childExit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stderr?.on('data', (data: Buffer) => {
      this.stderrTail = (this.stderrTail + data.toString('utf8')).slice(-STDERR_TAIL);
    });
    child.once('error', (e) => this.log.error(`server process: ${e.message}`));
    return child;
  }
}
