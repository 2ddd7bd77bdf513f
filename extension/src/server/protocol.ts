/**
 * Does the server speak this extension's protocol? The server announces it in `initialize`'s
 * `serverInfo.version` as `<package version>+protocol.<N>`; a server with another N (or none) is
 * not used: its commands and notifications may mean other things.
 *
 * Pure: imports no `vscode`; unit-tested in protocol.test.ts.
 */

import { PROTOCOL_VERSION } from '../../shared/names';
import { installOplensCommand, type InstallHints, type Problem } from '../problems/problems';

/** `0.1.0+protocol.2` → 2; undefined when the version names no protocol. */
export function protocolOf(version: string | undefined): number | undefined {
  const m = /(?:^|[+.])protocol\.(\d+)$/.exec(version ?? '');
  return m ? Number(m[1]) : undefined;
}

/** `0.1.0+protocol.2` → `0.1.0`. */
export function packageVersionOf(version: string): string {
  return version.replace(/[+.]?protocol\.\d+$/, '') || version;
}

export interface ServerInfo {
  name: string;
  version?: string;
}

/**
 * A problem when the server behind `serverInfo` speaks another protocol than this extension
 * (version `extensionVersion`, protocol `PROTOCOL_VERSION`), else undefined. `hints`: the
 * interpreter that runs the server here (stdio), for the install command; without it (a WebSocket
 * server elsewhere) the command is for the host.
 */
export function checkServerProtocol(serverInfo: ServerInfo | undefined, extensionVersion: string, hints?: InstallHints): Problem | undefined {
  const announced = serverInfo?.version;
  const protocol = protocolOf(announced);
  if (protocol === PROTOCOL_VERSION) {
    return undefined;
  }
  const ours = `the OpLens extension ${extensionVersion} (protocol ${PROTOCOL_VERSION})`;
  const theirs =
    protocol === undefined
      ? `the server (${serverInfo ? `${serverInfo.name} ${announced ?? 'with no version'}` : 'no serverInfo'}) announces no OpLens protocol`
      : `the server, oplens ${packageVersionOf(announced ?? '')}, speaks protocol ${protocol}`;
  const install = hints ? installOplensCommand({ ...hints }) : 'python -m pip install oplens';
  const pinned = hints?.sourceTree || hints?.bundle ? install : `${install}==${extensionVersion}`;
  const fix =
    protocol !== undefined && protocol > PROTOCOL_VERSION
      ? `Install matching OpLens versions: update the extension to the server's version ${packageVersionOf(announced ?? '')}, or install oplens ${extensionVersion} for the server (${pinned}).`
      : `Install matching OpLens versions: install oplens ${extensionVersion} for the server (${pinned}), then restart the server.`;
  return {
    severity: 'error',
    message: `OpLens: ${theirs}; ${ours} cannot use it. ${fix}`,
    detail: `serverInfo: ${JSON.stringify(serverInfo ?? null)}`,
    actions: hints
      ? [
          { kind: 'runInTerminal', title: `Install oplens ${extensionVersion}`, command: pinned },
          { kind: 'restartServer', title: 'Restart Server' },
        ]
      : [
          { kind: 'copy', title: 'Copy Install Command', text: pinned },
          { kind: 'restartServer', title: 'Reconnect' },
        ],
  };
}
