/**
 * Where a speedscope frame is, read from what speedscope prints for it: its hover tooltip's last row
 * (`/a/b.py:30`) or a stack line under the chart (`L30 return y (/a/b.py:30)`, `:col` after the line
 * where the file has one). The flame graph's page (extension/webview/flame.ts) opens that line on a click.
 */

export interface FrameLocation {
  file: string;
  /** 1-based, as speedscope's file format carries it. */
  line: number;
}

const IN_STACK = /\(([^()]+?):(\d+)(?::\d+)?\)$/;
const ALONE = /^([^()\s][^()]*?):(\d+)(?::\d+)?$/;

/** The file and line `text` names, or undefined where it names none. */
export function frameLocation(text: string): FrameLocation | undefined {
  const t = text.trim();
  const m = IN_STACK.exec(t) ?? ALONE.exec(t);
  if (!m?.[1] || !m[2]) {
    return undefined;
  }
  const line = Number(m[2]);
  return line >= 1 ? { file: m[1].trim(), line } : undefined;
}
