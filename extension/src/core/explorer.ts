/**
 * Neuron Explorer: what the server's `oplens.openExplorer` returns, read defensively, and the
 * tunnel a user needs to reach it.
 *
 * Neuron Explorer serves its UI on one port (3001) and its API on another (3002); the page calls
 * the API at `localhost:<api port>` from the browser, so *both* ports must be forwarded to the same
 * local port numbers, or the page loads empty. Profiles open at `http://localhost:<ui>/profile/<name>`.
 */

import type { Run } from '../../shared/run';

export interface ExplorerRecord {
  /** The profile's page, as the host sees it (http://localhost:3001/profile/<name>). */
  profileUrl: string;
  uiPort: number;
  apiPort: number;
  displayName: string;
  /** The server's own tunnel command (it knows its host name), if it gave one. */
  tunnelCommand: string;
  /** The server host's name, if given. */
  host: string;
  /** The ingested profile directory on the host. */
  profileDir: string;
  /** What the server did or noticed (viewer started, ports already served, ...). */
  messages: string[];
}

function pick(o: Record<string, unknown>, keys: string[]): unknown {
  for (const k of keys) {
    if (o[k] !== undefined && o[k] !== null && o[k] !== '') {
      return o[k];
    }
  }
  return undefined;
}

function asPort(v: unknown, fallback: number): number {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 && n < 65536 ? n : fallback;
}

/**
 * The record `oplens.openExplorer` answers with (the server's `ExplorerLink`: `url`, `tunnel`,
 * `host`, `ui_port`, `api_port`, `display_name`, `messages`, ...). Field names are also accepted
 * in camelCase and older spellings (`profile_url`, `tunnel_command`, `name`); what is missing is
 * derived from the ports.
 */
export function parseExplorerRecord(raw: unknown, defaults: { uiPort: number; apiPort: number }): ExplorerRecord {
  if (typeof raw !== 'object' || raw === null) {
    throw new Error('the server answered oplens.openExplorer with no record');
  }
  const o = raw as Record<string, unknown>;
  const nested = (pick(o, ['ports']) ?? {}) as Record<string, unknown>;
  const uiPort = asPort(pick(o, ['ui_port', 'uiPort']) ?? pick(nested, ['ui']), defaults.uiPort);
  const apiPort = asPort(pick(o, ['api_port', 'apiPort']) ?? pick(nested, ['api']), defaults.apiPort);
  const displayName = String(pick(o, ['display_name', 'displayName', 'name']) ?? '');
  let profileUrl = String(pick(o, ['profile_url', 'profileUrl', 'url']) ?? '');
  if (!profileUrl) {
    if (!displayName) {
      throw new Error('the server answered oplens.openExplorer with neither a profile URL nor a display name');
    }
    profileUrl = `http://localhost:${uiPort}/profile/${encodeURIComponent(displayName)}`;
  }
  return {
    profileUrl,
    uiPort,
    apiPort,
    displayName,
    tunnelCommand: String(pick(o, ['tunnel_command', 'tunnelCommand', 'tunnel']) ?? ''),
    host: String(pick(o, ['host', 'hostname']) ?? ''),
    profileDir: String(pick(o, ['profile_dir', 'profileDir', 'device_profile_dir']) ?? ''),
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

/** What to run on the host when the server cannot open Neuron Explorer itself. */
export function manualExplorerCommand(run: Run): string {
  return `oplens explorer ${run.run_dir || run.run_id}`;
}
