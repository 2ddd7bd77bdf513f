/**
 * The webviews' Content Security Policy: nothing by default (`default-src 'none'`); scripts only
 * with the page's nonce (from `crypto`, never `Math.random`); styles, images and fonts only from
 * the extension's own files (`webview.cspSource`); no network, no inline styles, no eval.
 *
 * Pure: imports no `vscode`; unit-tested in csp.test.ts.
 */

import { randomBytes } from 'node:crypto';

export function nonce(): string {
  return randomBytes(18).toString('base64');
}

/** What a page may need beyond the strict policy: inline styles, WebAssembly (never eval). */
export interface PolicyAllows {
  inlineStyles?: boolean;
  wasm?: boolean;
}

export function contentSecurityPolicy(cspSource: string, nonceValue: string, allows: PolicyAllows = {}): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}${allows.inlineStyles ? " 'unsafe-inline'" : ''}`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonceValue}'${allows.wasm ? " 'wasm-unsafe-eval'" : ''}`,
  ].join('; ');
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

export interface PageParts {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  title: string;
  nonce?: string;
}

/** The whole page: the policy, one stylesheet, one script carrying the nonce, an empty `#app`. */
export function pageHtml(p: PageParts): string {
  const n = p.nonce ?? nonce();
  return shell(contentSecurityPolicy(p.cspSource, n), n, {
    styles: [p.styleUri],
    scripts: [p.scriptUri],
    title: p.title,
    body: '<main id="app" aria-live="polite"><p class="muted">Loading…</p></main>',
  });
}

/** A page of `policy`: its stylesheets in the head, markup `body`, then its scripts in order, each with nonce `n`. */
export function shell(policy: string, n: string, page: { styles: string[]; scripts: string[]; title: string; body?: string }): string {
  const styles = page.styles.map((s) => `<link rel="stylesheet" href="${escapeHtml(s)}">\n`).join('');
  const scripts = page.scripts.map((s) => `<script nonce="${n}" src="${escapeHtml(s)}"></script>\n`).join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${policy}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${styles}<title>${escapeHtml(page.title)}</title>
</head>
<body>
${page.body ? `${page.body}\n` : ''}${scripts}</body>
</html>`;
}
