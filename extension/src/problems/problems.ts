/**
 * Everything that can go wrong, in the user's words, each with what to do about it.
 *
 * Pure functions from what happened (a JSON-RPC error, an interpreter check, a server exit, a
 * refused WebSocket) to a `Problem`: a message, optional detail for the output channel, and
 * actions. The extension turns actions into buttons (`notify.ts`); nothing here
 * knows VS Code. The engine's error kinds are the server's names (`ERROR_KIND`, generated from
 * `oplens.records.errors`).
 *
 * Pure: imports no `vscode`; unit-tested in problems.test.ts.
 */

import { backendFacts, EVERYWHERE_BACKEND } from '../../shared/backends';
import { DEFAULT_BACKEND } from '../../shared/generated/backends';
import { installArgs } from '../bundle/bundle';
import { ERROR_KIND, type ErrorKind } from '../../shared/generated/errors';

export type Action =
  | { kind: 'restartServer'; title: string }
  | { kind: 'showOutput'; title: string }
  | { kind: 'runInTerminal'; title: string; command: string }
  /** Install OpLens into the interpreter's environment from the bundled wheels, then restart the server. */
  | { kind: 'installOplens'; title: string }
  | { kind: 'copy'; title: string; text: string }
  | { kind: 'openSettings'; title: string; setting: string }
  | { kind: 'selectInterpreter'; title: string }
  | { kind: 'revealLocation'; title: string; uri: string; line: number }
  | { kind: 'editArguments'; title: string }
  | { kind: 'retryWithBackend'; title: string; backend: string }
  | { kind: 'openFile'; title: string; path: string }
  | { kind: 'setToken'; title: string }
  | { kind: 'pickProgram'; title: string };

export interface Problem {
  severity: 'error' | 'warning' | 'info';
  message: string;
  /** Longer text for the output channel (a traceback, a log tail). */
  detail?: string;
  actions: Action[];
}

/** POSIX shell quoting for a command a user will paste or we send to a terminal. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

// ---- the interpreter check -----------------------------------------------------------------

/** A Python snippet that reports, as one JSON line, what the server and its worker need. */
export const PREFLIGHT_SCRIPT = [
  'import importlib.metadata as m, importlib.util as u, json, sys',
  'def v(name):',
  '    try:',
  '        return m.version(name)',
  '    except Exception:',
  '        return None',
  'out = {"python": sys.version.split()[0], "executable": sys.executable, "torch": v("torch"),',
  '       "oplens": None, "oplens_error": None}',
  'try:',
  '    import oplens',
  '    out["oplens"] = getattr(oplens, "__version__", "?")',
  '    # Found, not imported: the server imports its LSP stack right after this (importing it here too',
  '    # cost ~1-2 s before every start); a stack that is there but broken fails the server, whose exit says why.',
  '    for name in ("pygls", "lsprotocol", "cattrs"):',
  '        if u.find_spec(name) is None:',
  '            raise ModuleNotFoundError(f"No module named {name!r}")',
  'except Exception as e:',
  '    out["oplens_error"] = f"{type(e).__name__}: {e}"',
  '# No torch: the build for the device this host has, in the server\'s words (backends/host.py).',
  'if out["torch"] is None and out["oplens"]:',
  '    try:',
  '        from oplens.backends.host import torch_install',
  '        t = torch_install(sys.executable)',
  '        out["torch_install"] = {"backend": t.backend, "title": t.title, "seen": t.seen, "command": t.command}',
  '    except Exception:',
  '        pass',
  'print(json.dumps(out))',
].join('\n');

export interface PreflightReport {
  python: string;
  executable: string;
  oplens: string | null;
  oplens_error: string | null;
  torch: string | null;
  /** Where torch is missing: the install command for the device this host has (the server's backends/host.py). */
  torch_install: TorchInstall | null;
}

/** The torch build for this host: `backend` whose device it has ("neuron", "cuda", "cpu"), what showed it. */
export interface TorchInstall {
  backend: string;
  title: string;
  seen: string;
  command: string;
}

/** What running `python -c PREFLIGHT_SCRIPT` gave. */
export interface PreflightOutcome {
  /** The interpreter could not be started at all: ENOENT, EACCES, ... */
  spawnError?: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut?: boolean;
}

export interface InstallHints {
  /** The interpreter as the user would type it. */
  python: string;
  /** The workspace is the OpLens source tree itself (it has OpLens's pyproject.toml). */
  sourceTree?: string;
  /** Where the interpreter came from, for messages: "oplens.pythonPath", "the Python extension", ... */
  origin: string;
  pythonExtension: boolean;
  /** The extension's bundled OpLens (its wheels install OpLens with no registry). */
  bundle?: { wheels: string; version: string };
  /** The server runs from the bundle (`oplens.importStrategy`: useBundled), not the environment's OpLens. */
  bundled?: boolean;
}

export function parsePreflight(stdout: string): PreflightReport | undefined {
  const line = stdout
    .split('\n')
    .map((l) => l.trim())
    .reverse()
    .find((l) => l.startsWith('{'));
  if (!line) {
    return undefined;
  }
  try {
    const o = JSON.parse(line) as Record<string, unknown>;
    const s = (k: string): string | null => (typeof o[k] === 'string' ? (o[k] as string) : null);
    const t = typeof o.torch_install === 'object' && o.torch_install !== null ? (o.torch_install as Record<string, unknown>) : undefined;
    const torchInstall =
      t && typeof t.command === 'string'
        ? { backend: String(t.backend ?? ''), title: String(t.title ?? ''), seen: String(t.seen ?? ''), command: t.command }
        : null;
    return {
      python: s('python') ?? '?',
      executable: s('executable') ?? '',
      oplens: s('oplens'),
      oplens_error: s('oplens_error'),
      torch: s('torch'),
      torch_install: torchInstall,
    };
  } catch {
    return undefined;
  }
}

/**
 * How OpLens gets into the interpreter's environment: editable from the source tree it is open on; else
 * from the extension's bundled wheels, no registry needed (bundle.ts); else by name from a registry.
 */
export function installOplensCommand(h: InstallHints): string {
  if (h.sourceTree) {
    return `${shellQuote(h.python)} -m pip install -e ${shellQuote(h.sourceTree)}`;
  }
  if (h.bundle) {
    return [h.python, ...installArgs(h.bundle)].map(shellQuote).join(' ');
  }
  return `${shellQuote(h.python)} -m pip install oplens`;
}

/** The install actions for OpLens: done here and the server restarted (the bundle), or a command to run. */
function installOplensActions(h: InstallHints, command: string): Action[] {
  return h.bundle && !h.sourceTree
    ? [{ kind: 'installOplens', title: 'Install OpLens' }, { kind: 'copy', title: 'Copy Command', text: command }]
    : [
        { kind: 'runInTerminal', title: 'Install in Terminal', command },
        { kind: 'copy', title: 'Copy Command', text: command },
      ];
}

/**
 * No torch: one message with the command for the device this host has, as the server's
 * backends/host.py chose it (never the CPU wheel on a Trainium or GPU host); where the interpreter's
 * OpLens is too old to say, no command but where to find the right one.
 */
export function torchAdvice(report: PreflightReport, h: InstallHints): { message: string; command?: string } {
  const t = report.torch_install;
  const head = `OpLens: the interpreter ${h.python} (Python ${report.python}) has no PyTorch, so profiles cannot run.`;
  if (!t) {
    return {
      message:
        `${head} Install the PyTorch build for this host's device into it (https://pytorch.org/get-started/locally/; ` +
        'on Trainium, torch-neuronx from the Neuron pip repository), or choose an interpreter that has it.',
    };
  }
  const host = t.seen ? `This host has a ${t.title} device (${t.seen})` : 'This host has no Neuron or NVIDIA device';
  return { message: `${head} ${host}: install the ${t.title} build with: ${t.command}`, command: t.command };
}

function chooseInterpreter(h: InstallHints): Action[] {
  return h.pythonExtension
    ? [{ kind: 'selectInterpreter', title: 'Select Interpreter' }, { kind: 'openSettings', title: 'Set oplens.pythonPath', setting: 'oplens.pythonPath' }]
    : [{ kind: 'openSettings', title: 'Set oplens.pythonPath', setting: 'oplens.pythonPath' }];
}

/**
 * The interpreter check → a blocking problem (`fatal`: the server cannot start), a warning (the
 * server starts, profiles will fail until fixed), or nothing.
 */
export function diagnosePreflight(o: PreflightOutcome, h: InstallHints): { problem?: Problem; fatal: boolean; report?: PreflightReport } {
  if (o.spawnError) {
    const why = o.spawnError === 'ENOENT' ? 'was not found' : `could not be started (${o.spawnError})`;
    return {
      fatal: true,
      problem: {
        severity: 'error',
        message: `OpLens: the Python interpreter ${h.python} (${h.origin}) ${why}. Choose an interpreter that has OpLens and PyTorch installed.`,
        actions: chooseInterpreter(h),
      },
    };
  }
  if (o.timedOut) {
    return {
      fatal: false,
      problem: {
        severity: 'warning',
        message: `OpLens: ${h.python} took too long to answer a version check; starting the server anyway.`,
        detail: o.stderr,
        actions: [{ kind: 'showOutput', title: 'Show Output' }],
      },
    };
  }
  const report = parsePreflight(o.stdout);
  if (!report) {
    return {
      fatal: true,
      problem: {
        severity: 'error',
        message: `OpLens: ${h.python} (${h.origin}) did not run a Python check (exit ${o.exitCode ?? '?'}). Is it a Python 3.10+ interpreter?`,
        detail: o.stderr || o.stdout,
        actions: [...chooseInterpreter(h), { kind: 'showOutput', title: 'Show Output' }],
      },
    };
  }
  if (!report.oplens) {
    const command = installOplensCommand(h);
    const missing = /No module named '?oplens'?$/.test(report.oplens_error ?? '') || !report.oplens_error;
    return {
      fatal: true,
      report,
      problem: {
        severity: 'error',
        message: missing
          ? `OpLens: the interpreter ${h.python} (Python ${report.python}, ${h.origin}) does not have the oplens package. Install it with: ${command}`
          : `OpLens: the oplens package in ${h.python} does not import (${report.oplens_error}). Reinstall it with: ${command}`,
        detail: report.oplens_error ?? undefined,
        actions: [
          ...installOplensActions(h, command),
          ...(h.bundle && !h.bundled ? [{ kind: 'openSettings', title: 'Use the Bundled Server', setting: 'oplens.importStrategy' } as Action] : []),
          ...chooseInterpreter(h),
        ],
      },
    };
  }
  if (!report.torch) {
    const { message, command } = torchAdvice(report, h);
    return {
      fatal: false,
      report,
      problem: {
        severity: 'warning',
        message,
        actions: [
          ...(command
            ? [{ kind: 'runInTerminal', title: 'Install in Terminal', command } as Action, { kind: 'copy', title: 'Copy Command', text: command } as Action]
            : []),
          ...chooseInterpreter(h),
        ],
      },
    };
  }
  return { fatal: false, report };
}

// ---- the server process --------------------------------------------------------------------

/** The server stopped on its own: why, from its exit and the tail of its stderr. */
export function describeServerExit(code: number | null, signal: string | null, stderrTail: string, h?: InstallHints): Problem {
  const missing = /No module named '?(oplens|pygls|lsprotocol|websockets)'?/.exec(stderrTail);
  if (missing && h) {
    const command = installOplensCommand(h);
    return {
      severity: 'error',
      message: `OpLens: the server could not start: ${h.python} lacks the Python module '${missing[1]}'. Install OpLens with: ${command}`,
      detail: stderrTail,
      actions: [
        ...installOplensActions(h, command).filter((a) => a.kind !== 'copy'),
        { kind: 'restartServer', title: 'Restart Server' },
        { kind: 'showOutput', title: 'Show Output' },
      ],
    };
  }
  const how = signal ? `was killed (${signal})` : code === null ? 'stopped' : `exited with code ${code}`;
  const last = stderrTail.trim().split('\n').filter(Boolean).pop();
  return {
    severity: 'error',
    message: `OpLens: the language server ${how}${last ? `: ${last}` : ''}. Earlier results are kept on disk; restart to continue.`,
    detail: stderrTail,
    actions: [
      { kind: 'restartServer', title: 'Restart Server' },
      { kind: 'showOutput', title: 'Show Output' },
    ],
  };
}

// ---- the WebSocket connection --------------------------------------------------------------

export interface WsFailure {
  /** A socket error code: ECONNREFUSED, ENOTFOUND, ETIMEDOUT, ECONNRESET, ... */
  code?: string;
  /** The HTTP status of a refused upgrade: 401 (token), 403 (browser origin), ... */
  status?: number;
  message?: string;
}

export function describeWsFailure(url: string, f: WsFailure, tokenSource: string): Problem {
  let port = '8765';
  let host = 'localhost';
  try {
    const u = new URL(url);
    port = u.port || (u.protocol === 'wss:' ? '443' : '80');
    host = u.hostname;
  } catch {
    // keep the defaults for the hint
  }
  const tunnel = `ssh -N -L ${port}:localhost:${port} <host>`;
  const serve = `oplens serve --ws 127.0.0.1:${port}`;
  if (f.status === 401) {
    return {
      severity: 'error',
      message:
        `OpLens: the server at ${url} refused the token (${tokenSource}). The server prints its token at start ` +
        'and writes it to ~/.oplens/ws-token on its host (a restarted server keeps it; `oplens serve --ws --new-token` makes a new one).',
      actions: [
        { kind: 'setToken', title: 'Set Token…' },
        { kind: 'openSettings', title: 'Set Token File', setting: 'oplens.server.tokenFile' },
      ],
    };
  }
  if (f.status === 403) {
    return {
      severity: 'error',
      message: `OpLens: the server at ${url} refused the connection as coming from a web page. Connect from the desktop editor (or run the server next to the editor over stdio).`,
      actions: [{ kind: 'openSettings', title: 'Open Settings', setting: 'oplens.server.url' }],
    };
  }
  if (f.status !== undefined) {
    return {
      severity: 'error',
      message: `OpLens: ${url} answered HTTP ${f.status}, not an OpLens WebSocket server. Check oplens.server.url.`,
      detail: f.message,
      actions: [{ kind: 'openSettings', title: 'Open Settings', setting: 'oplens.server.url' }],
    };
  }
  if (f.code === 'ECONNREFUSED' || f.code === 'ECONNRESET') {
    const local = host === 'localhost' || host === '127.0.0.1' || host === '::1';
    return {
      severity: 'error',
      message: local
        ? `OpLens: nothing answers at ${url}. Is the tunnel up (${tunnel}) and the server running on the host (${serve})?`
        : `OpLens: ${url} refused the connection. Is the server running (${serve})? It listens on loopback: reach it through an SSH tunnel (${tunnel}) and connect to ws://localhost:${port}.`,
      actions: [
        { kind: 'copy', title: 'Copy Tunnel Command', text: tunnel },
        { kind: 'restartServer', title: 'Retry' },
        { kind: 'openSettings', title: 'Open Settings', setting: 'oplens.server.url' },
      ],
    };
  }
  return {
    severity: 'error',
    message: `OpLens: cannot connect to ${url}${f.code ? ` (${f.code})` : ''}${f.message ? `: ${f.message}` : ''}.`,
    actions: [
      { kind: 'restartServer', title: 'Retry' },
      { kind: 'openSettings', title: 'Open Settings', setting: 'oplens.server.url' },
    ],
  };
}

// ---- errors of requests --------------------------------------------------------------------

/** A JSON-RPC error as vscode-languageclient hands it over (`ResponseError`). */
export interface RpcError {
  code?: number;
  message: string;
  data?: unknown;
}

export interface EngineErrorData {
  /** One of `ERROR_KIND`, or a kind of a newer server (told as any other failure). */
  kind: ErrorKind | (string & {});
  message: string;
  detail: string;
  location: { file?: string; line?: number; function?: string; uri?: string };
  exit_code?: number;
}

export function engineError(data: unknown): EngineErrorData | undefined {
  if (typeof data !== 'object' || data === null) {
    return undefined;
  }
  const d = data as Record<string, unknown>;
  if (typeof d.kind !== 'string' || typeof d.message !== 'string') {
    return undefined;
  }
  const loc = typeof d.location === 'object' && d.location !== null ? (d.location as Record<string, unknown>) : {};
  return {
    kind: d.kind,
    message: d.message,
    detail: typeof d.detail === 'string' ? d.detail : '',
    location: {
      file: typeof loc.file === 'string' ? loc.file : undefined,
      line: typeof loc.line === 'number' ? loc.line : undefined,
      function: typeof loc.function === 'string' ? loc.function : undefined,
      uri: typeof loc.uri === 'string' ? loc.uri : undefined,
    },
    exit_code: typeof d.exit_code === 'number' ? d.exit_code : undefined,
  };
}

/** The connection went away under a pending request (the server died). */
export function isConnectionLost(e: RpcError): boolean {
  return /connection (got )?disposed|connection is closed|client is not running|not running/i.test(e.message);
}

/** How the extension reaches its server: a process it started (stdio) or `oplens serve --ws` on a host. */
export type ServerLink = 'stdio' | 'websocket';

/**
 * A failed profile (or compare) → what to tell the user. `what` names it: "rmsnorm_naive". Over a
 * WebSocket a lost connection is the tunnel (or the host's server restarting): the server finishes the
 * job and keeps its run, which the reconnect brings back, so the advice is to wait, not to restart.
 */
export function describeProfileError(e: RpcError, what: string, backend: string, link: ServerLink = 'stdio'): Problem {
  if (isConnectionLost(e) && link === 'websocket') {
    return {
      severity: 'warning',
      message:
        `OpLens: the connection to the server dropped while profiling ${what}. The server on the host finishes it and keeps the run; ` +
        'it shows here once reconnected (nothing is re-run).',
      actions: [{ kind: 'showOutput', title: 'Show Output' }],
    };
  }
  if (isConnectionLost(e)) {
    return {
      severity: 'error',
      message: `OpLens: the server stopped while profiling ${what}.`,
      actions: [
        { kind: 'restartServer', title: 'Restart Server' },
        { kind: 'showOutput', title: 'Show Output' },
      ],
    };
  }
  const err = engineError(e.data);
  if (!err) {
    return { severity: 'error', message: `OpLens: ${what}: ${e.message}`, actions: [{ kind: 'showOutput', title: 'Show Output' }] };
  }
  const detail = err.detail || undefined;
  switch (err.kind) {
    case ERROR_KIND.cancelled:
      return { severity: 'info', message: `OpLens: profiling ${what} was cancelled.`, actions: [] };
    case ERROR_KIND.user_exception: {
      const actions: Action[] = [];
      if (err.location.uri && err.location.line) {
        actions.push({ kind: 'revealLocation', title: 'Go to Line', uri: err.location.uri, line: err.location.line });
      }
      actions.push({ kind: 'editArguments', title: 'Edit Arguments…' }, { kind: 'showOutput', title: 'Show Traceback' });
      // the engine's message already names the function and the line: "f raised at m.py:4: ZeroDivisionError: ..."
      return { severity: 'error', message: `OpLens: ${err.message}`, detail, actions };
    }
    case ERROR_KIND.bad_input:
      return {
        severity: 'error',
        message: `OpLens: ${err.message}`,
        detail,
        actions: [{ kind: 'editArguments', title: 'Edit Arguments…' }, ...(detail ? [{ kind: 'showOutput', title: 'Show Details' } as Action] : [])],
      };
    case ERROR_KIND.backend_unavailable:
      return {
        severity: 'error',
        message: `OpLens: ${err.message}`,
        detail,
        actions:
          backend === EVERYWHERE_BACKEND || backend === DEFAULT_BACKEND // `auto` ends there when nothing better is present
            ? [{ kind: 'showOutput', title: 'Show Details' }]
            : [
                { kind: 'retryWithBackend', title: `Profile on the ${backendFacts(EVERYWHERE_BACKEND).title}`, backend: EVERYWHERE_BACKEND },
                { kind: 'openSettings', title: 'Change oplens.backend', setting: 'oplens.backend' },
              ],
      };
    case ERROR_KIND.timeout:
      return {
        severity: 'error',
        message: `OpLens: ${err.message}`,
        detail,
        actions: [
          { kind: 'openSettings', title: 'Raise the Timeout', setting: 'oplens.timeoutSeconds' },
          { kind: 'openSettings', title: 'Fewer Iterations', setting: 'oplens.iterations' },
        ],
      };
    default:
      return {
        severity: 'error',
        message: `OpLens: ${err.message}`,
        detail,
        actions: [{ kind: 'showOutput', title: 'Show Details' }],
      };
  }
}

/** JSON-RPC's RequestCancelled: the client cancelled the request ($/cancelRequest). */
export const REQUEST_CANCELLED = -32800;

/**
 * A failed capture inside the user's program (Profile Function in Program…) → what to tell the
 * user. The engine's message says what the program did (never called the function, raised, ended
 * early, outlived the timeout, died); a run it kept before (a partial one) is drawn by its
 * `oplens/result` like any run. `program` names the program: "train.py --steps 30".
 */
export function describeCaptureError(e: RpcError, what: string, program: string, backend: string, link: ServerLink = 'stdio'): Problem {
  if (e.code === REQUEST_CANCELLED) {
    return { severity: 'info', message: `OpLens: capturing ${what} in ${program} was cancelled; the program was stopped.`, actions: [] };
  }
  const err = isConnectionLost(e) ? undefined : engineError(e.data);
  if (!err) {
    return describeProfileError(e, what, backend, link);
  }
  const detail = err.detail || undefined;
  const output: Action = { kind: 'showOutput', title: 'Show Program Output' };
  const choose: Action = { kind: 'pickProgram', title: 'Choose Program…' };
  switch (err.kind) {
    case ERROR_KIND.cancelled:
      return { severity: 'info', message: `OpLens: capturing ${what} in ${program} was cancelled; the program was stopped.`, actions: [] };
    case ERROR_KIND.not_called:
      // "the program never called X": the counts and the likely cause are the engine's
      return {
        severity: 'error',
        message: `OpLens: ${err.message}`,
        detail,
        actions: [choose, { kind: 'openSettings', title: 'Fewer Calls to Skip', setting: 'oplens.captureSkip' }, output],
      };
    case ERROR_KIND.program_failed:
    case ERROR_KIND.crash:
      return { severity: 'error', message: `OpLens: ${err.message}`, detail, actions: [output, choose] };
    case ERROR_KIND.timeout:
      return {
        severity: 'error',
        message: `OpLens: ${err.message}`,
        detail,
        actions: [
          { kind: 'openSettings', title: 'Raise the Timeout', setting: 'oplens.timeoutSeconds' },
          { kind: 'openSettings', title: 'Fewer Calls', setting: 'oplens.captureCalls' },
          output,
        ],
      };
    case ERROR_KIND.bad_input:
      return { severity: 'error', message: `OpLens: ${err.message}`, detail, actions: [choose, ...(detail ? [output] : [])] };
    default:
      return describeProfileError(e, what, backend);
  }
}
