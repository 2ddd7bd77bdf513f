/**
 * The flame graph's page: speedscope 1.25.0 (its own release build, unmodified, in dist/speedscope) with
 * this script loaded first. It hands speedscope the run's file and turns a frame's file:line into a jump.
 *
 * speedscope takes a file from its page in three documented ways, of which a webview can use one:
 * `#profileURL=` only from an http(s) page (a webview's is `vscode-webview:`), drag-and-drop needs the user;
 * `#localProfilePath=` (what its CLI opens) defines `window.speedscope.loadFileFromBase64(name, base64)` and
 * then loads a script from a file:// URL, which the page's policy refuses. So the hash is set before
 * speedscope starts, and the file goes in through that function once it exists.
 *
 * A frame jumps to its line on Ctrl/⌘+click in the chart (its hover tooltip's `file:line` row) or on a click of a
 * stack line under the chart (`name (file:line)`).
 */

import './flame.css';
import { frameLocation } from '../shared/frameLocation';
import type { FromFlameGraph, ToFlameGraph } from '../shared/messages';
import { channel } from './vscodeApi';

interface Speedscope {
  loadFileFromBase64(name: string, base64: string): void;
}

const vscode = channel<FromFlameGraph, never>();
// left heavy: each stack's calls merged, widest first (a run's calls are many short stretches in time order)
history.replaceState(null, '', '#localProfilePath=oplens&view=left-heavy');

function speedscope(): Speedscope | undefined {
  return (window as unknown as { speedscope?: Speedscope }).speedscope;
}

/** UTF-8 text as base64, in chunks (String.fromCharCode takes a bounded number of arguments). */
function base64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** The server's hint over the chart. */
function showNote(text: string): void {
  let note = document.getElementById('oplens-note');
  if (!note) {
    note = document.createElement('div');
    note.id = 'oplens-note';
    note.setAttribute('role', 'status');
    document.body.appendChild(note);
  }
  note.textContent = text;
}

/** speedscope's words when it cannot read a file; the extension is told so (its log, a test). */
function watchForFailure(): void {
  const seen = new MutationObserver(() => {
    const text = document.body.innerText;
    if (text.includes('Something went wrong')) {
      seen.disconnect();
      vscode.post({ type: 'failed', message: text.slice(0, 500) });
    }
  });
  seen.observe(document.body, { childList: true, subtree: true, characterData: true });
}

/** The hovered frame's `file:line` (speedscope's tooltip: a count, the name, then a row with the place). */
function hoveredLocation(): ReturnType<typeof frameLocation> {
  for (const el of Array.from(document.querySelectorAll('div'))) {
    if (el.childElementCount === 0 && el.parentElement?.querySelector(':scope > span') && getComputedStyle(el.parentElement).whiteSpace === 'nowrap') {
      const found = frameLocation(el.textContent ?? '');
      if (found) {
        return found;
      }
    }
  }
  return undefined;
}

function onClick(e: MouseEvent): void {
  const target = e.target as Element | null;
  let found: ReturnType<typeof frameLocation>;
  if (target?.tagName === 'CANVAS') {
    found = e.ctrlKey || e.metaKey ? hoveredLocation() : undefined; // a plain click selects the frame, as in speedscope
  } else {
    // a stack line under the chart, `name (file:line)`: the click lands on its name's text or on the span
    const line = target?.closest('div');
    const text = line?.textContent?.trim() ?? '';
    found = text.endsWith(')') ? frameLocation(text) : undefined;
  }
  if (found) {
    e.preventDefault();
    vscode.post({ type: 'openLine', file: found.file, line: found.line });
  }
}

window.addEventListener('message', (event: MessageEvent<ToFlameGraph>) => {
  const m = event.data;
  const loader = speedscope();
  if (!loader) {
    vscode.post({ type: 'failed', message: 'speedscope had not started when the file came' });
    return;
  }
  watchForFailure();
  loader.loadFileFromBase64(m.fileName, base64(m.text));
  showNote(m.hint);
});

document.addEventListener('click', onClick, true);
const waiting = setInterval(() => {
  if (speedscope()) {
    clearInterval(waiting);
    vscode.post({ type: 'ready' });
  }
}, 20);
