/**
 * Path mappings between this editor's files and the server host's (as debuggers do), the same
 * rules as `server/oplens/lsp/paths.py`: the longest matching prefix wins, a prefix matches only at
 * a path-segment boundary, and unmapped paths pass through unchanged.
 *
 * The server applies the mappings to every URI it receives or sends (the extension passes them as
 * `initializationOptions.pathMappings`); the extension needs them itself only for paths *inside*
 * a result (run directory, trace.json, artifacts), which are host paths.
 *
 * Pure: imports no `vscode`; unit-tested in pathMap.test.ts.
 */

export interface PathMapping {
  local: string;
  host: string;
}

export class PathMapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathMapError';
  }
}

function trimSlash(p: string): string {
  const t = p.replace(/\/+$/, '');
  return t === '' ? '/' : t;
}

/** The `oplens.pathMappings` setting, checked: each entry an object with string `local` and `host`. */
export function parsePathMappings(raw: unknown): PathMapping[] {
  if (raw === undefined || raw === null) {
    return [];
  }
  if (!Array.isArray(raw)) {
    throw new PathMapError('oplens.pathMappings must be a list of {"local": ..., "host": ...} objects');
  }
  return raw.map((m: unknown, i) => {
    const entry = m as Record<string, unknown> | null;
    if (typeof entry !== 'object' || entry === null || typeof entry.local !== 'string' || typeof entry.host !== 'string') {
      throw new PathMapError(`oplens.pathMappings[${i}] must be an object with string fields "local" and "host"`);
    }
    if (!entry.local.trim() || !entry.host.trim()) {
      throw new PathMapError(`oplens.pathMappings[${i}] has an empty "local" or "host"`);
    }
    return { local: trimSlash(entry.local), host: trimSlash(entry.host) };
  });
}

function swap(path: string, src: string, dst: string): string | undefined {
  if (path === src) {
    return dst;
  }
  const prefix = src === '/' ? '/' : src + '/';
  if (path.startsWith(prefix)) {
    const rest = path.slice(prefix.length);
    return dst === '/' ? '/' + rest : `${dst}/${rest}`;
  }
  return undefined;
}

export class PathMap {
  private readonly byLocal: PathMapping[];
  private readonly byHost: PathMapping[];

  constructor(mappings: PathMapping[] = []) {
    // longest prefix first, so nested mappings win over their parents
    this.byLocal = [...mappings].sort((a, b) => b.local.length - a.local.length);
    this.byHost = [...mappings].sort((a, b) => b.host.length - a.host.length);
  }

  get empty(): boolean {
    return this.byLocal.length === 0;
  }

  toHost(localPath: string): string {
    for (const m of this.byLocal) {
      const mapped = swap(localPath, m.local, m.host);
      if (mapped !== undefined) {
        return mapped;
      }
    }
    return localPath;
  }

  toLocal(hostPath: string): string {
    for (const m of this.byHost) {
      const mapped = swap(hostPath, m.host, m.local);
      if (mapped !== undefined) {
        return mapped;
      }
    }
    return hostPath;
  }
}

/**
 * A path written in a result (absolute, or relative to the run directory) as a host path.
 * `artifacts.trace_json` is `"trace.json"`; the run directory is absolute.
 */
export function resolveArtifact(runDir: string, artifact: string): string {
  if (!artifact) {
    return '';
  }
  if (artifact.startsWith('/')) {
    return artifact;
  }
  return `${trimSlash(runDir)}/${artifact.replace(/^\.\//, '')}`;
}
