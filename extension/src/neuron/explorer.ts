/**
 * Neuron Explorer: what the server's `oplens.openExplorer` returns, checked, and the
 * tunnel a user needs to reach it.
 *
 * Neuron Explorer serves its UI on one port (3001) and its API on another (3002); the page calls
 * the API at `localhost:<api port>` from the browser, so *both* ports must be forwarded to the same
 * local port numbers, or the page loads empty. Profiles open at `http://localhost:<ui>/profile/<name>`.
 *
 * Pure: imports no `vscode`; unit-tested in explorer.test.ts.
 */

import { OPEN_EXPLORER_COMMAND } from '../../shared/names';
import type { Run } from '../../shared/run';

export interface ExplorerRecord {
  /** The profile's page, as the host sees it (http://localhost:3001/profile/<name>). */
  profileUrl: string;
  uiPort: number;
  apiPort: number;
  displayName: string;
  /** The server's own tunnel command (it knows its host name). */
  tunnelCommand: string;
  /** The server host's name. */
  host: string;
  /** What the server did or noticed (viewer started, ports already served, ...). */
  messages: string[];
}

function isPort(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 && v < 65536;
}

/**
 * The record `oplens.openExplorer` answers with: the server's `ExplorerLink`
 * (`server/oplens/backends/neuron/explorer.py`: `url`, `tunnel`, `host`, `ui_port`, `api_port`,
 * `display_name`, `messages`, ...), checked.
 */
export function parseExplorerRecord(raw: unknown): ExplorerRecord {
  if (typeof raw !== 'object' || raw === null) {
    throw new Error(`the server answered ${OPEN_EXPLORER_COMMAND} with no record`);
  }
  const o = raw as Record<string, unknown>;
  const text = (key: string): string => (typeof o[key] === 'string' ? (o[key] as string) : '');
  if (!text('url')) {
    throw new Error(`the server answered ${OPEN_EXPLORER_COMMAND} with no profile URL`);
  }
  if (!isPort(o.ui_port) || !isPort(o.api_port)) {
    throw new Error(`the server answered ${OPEN_EXPLORER_COMMAND} without its ports (ui_port ${String(o.ui_port)}, api_port ${String(o.api_port)})`);
  }
  return {
    profileUrl: text('url'),
    uiPort: o.ui_port,
    apiPort: o.api_port,
    displayName: text('display_name'),
    tunnelCommand: text('tunnel'),
    host: text('host'),
    messages: Array.isArray(o.messages) ? o.messages.filter((m): m is string => typeof m === 'string') : [],
  };
}

/** `ssh -L 3001:localhost:3001 -L 3002:localhost:3002 <host>`: both ports, same numbers locally. */
export function tunnelCommand(uiPort: number, apiPort: number, host: string): string {
  return `ssh -L ${uiPort}:localhost:${uiPort} -L ${apiPort}:localhost:${apiPort} ${host || '<host>'}`;
}

/** The record's own tunnel command when it forwards both ports, else one built from the ports. */
export function tunnelFor(r: ExplorerRecord): string {
  const own = r.tunnelCommand;
  if (own && own.includes(String(r.uiPort)) && own.includes(String(r.apiPort))) {
    return own;
  }
  return tunnelCommand(r.uiPort, r.apiPort, r.host);
}

/** The profile page with its port replaced (where the UI port was forwarded to a different local one). */
export function withPort(url: string, port: number): string {
  try {
    const u = new URL(url);
    u.port = String(port);
    return u.toString();
  } catch {
    return url;
  }
}

/** Why a run cannot be opened in Neuron Explorer, or undefined when it can. */
export function explorerUnavailable(run: Run): string | undefined {
  if (run.backend.name !== 'neuron') {
    return (
      `this run is on ${run.backend.device_label || run.backend.name}; Neuron Explorer shows Neuron device profiles. ` +
      'Use Open Trace for CPU and CUDA runs, or profile with oplens.backend "neuron".'
    );
  }
  if (!run.artifacts.device_profile_dir && !run.artifacts.profile_output_dir) {
    return 'this Neuron run kept no device profile (no NEFF/NTFF pair was captured); profile it again.';
  }
  return undefined;
}
