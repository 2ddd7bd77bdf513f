/**
 * The formats Export… offers and `oplens.export`'s answer, checked.
 *
 * Pure: imports no `vscode`; unit-tested in exportAnswer.test.ts.
 */

export interface ExportAnswer {
  path: string;
  uri: string;
  format: string;
  /** How to open it, in the server's words. */
  opensIn: string;
  folder: boolean;
  /** What the export could not hold, and why, in the server's words. */
  notes: string[];
}

/** The formats offered, in the order a user picks from (the server names how each opens). */
export const EXPORT_CHOICES = [
  { format: 'perfetto', label: 'Perfetto / Chrome trace', detail: 'the lines as named slices, ranks as processes (.json.gz)' },
  { format: 'speedscope', label: 'speedscope', detail: 'flame graphs of host and device time by line (.json)' },
  { format: 'tensorboard', label: 'TensorBoard / HTA', detail: 'a folder of rank<R>.pt.trace.json.gz' },
] as const;

/**
 * The path of a page's external address: `asExternalUri` maps a port, and code-server's path proxy
 * (`/proxy/<port>/`) keeps only the port, so the page's own path (its one-shot token) is put back after it.
 */
export function externalPath(pagePath: string, externalPathGiven: string): string {
  if (pagePath.length <= 1 || externalPathGiven.endsWith(pagePath)) {
    return externalPathGiven;
  }
  return externalPathGiven.replace(/\/+$/, '') + pagePath;
}

/** `oplens.export`'s answer, checked; undefined where it is not one. */
export function parseExportAnswer(v: unknown): ExportAnswer | undefined {
  if (typeof v !== 'object' || v === null) {
    return undefined;
  }
  const o = v as Record<string, unknown>;
  if (typeof o.path !== 'string' || typeof o.uri !== 'string' || typeof o.format !== 'string') {
    return undefined;
  }
  const notes = Array.isArray(o.notes) ? o.notes.filter((n): n is string => typeof n === 'string') : [];
  return { path: o.path, uri: o.uri, format: o.format, opensIn: typeof o.opens_in === 'string' ? o.opens_in : '', folder: o.folder === true, notes };
}
