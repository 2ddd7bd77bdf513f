/**
 * The flame graph's page: speedscope's own release build (dist/speedscope, copied from the npm package by
 * esbuild.mjs) after OpLens's loader (dist/webview/flame.js, extension/webview/flame.ts), and `oplens.flameGraph`'s
 * answer, checked.
 *
 * speedscope styles its elements from inline `<style>` tags and style attributes (aphrodite), so this page's
 * policy allows inline styles, which the other pages' (results/csp.ts) do not, and WebAssembly (not eval); scripts
 * still run only with the page's nonce, and nothing comes from the network.
 *
 * Pure: imports no `vscode`; unit-tested in flamePage.test.ts.
 */

import { contentSecurityPolicy, nonce, shell } from '../results/csp';

export interface FlamePageParts {
  cspSource: string;
  speedscopeJs: string;
  speedscopeCss: string;
  loaderJs: string;
  loaderCss: string;
  title: string;
  nonce?: string;
}

export function flamePageHtml(p: FlamePageParts): string {
  const n = p.nonce ?? nonce();
  // speedscope styles with inline <style> tags and compiles its demangler's WebAssembly at start
  const policy = contentSecurityPolicy(p.cspSource, n, { inlineStyles: true, wasm: true });
  // the loader first: it sets the page's hash before speedscope reads it
  return shell(policy, n, { styles: [p.speedscopeCss, p.loaderCss], scripts: [p.loaderJs, p.speedscopeJs], title: p.title });
}

export interface FlameAnswer {
  /** The speedscope file (https://www.speedscope.app/file-format-schema.json), its frames' files in this side's terms. */
  profile: Record<string, unknown>;
  title: string;
  fileName: string;
  /** How to use the view, in the server's words. */
  hint: string;
}

/** `oplens.flameGraph`'s answer, checked; undefined where it is not one. */
export function parseFlameAnswer(v: unknown): FlameAnswer | undefined {
  if (typeof v !== 'object' || v === null) {
    return undefined;
  }
  const o = v as Record<string, unknown>;
  const profile = o.profile;
  if (typeof profile !== 'object' || profile === null || !Array.isArray((profile as Record<string, unknown>).profiles)) {
    return undefined;
  }
  if (typeof o.title !== 'string' || typeof o.file_name !== 'string') {
    return undefined;
  }
  return { profile: profile as Record<string, unknown>, title: o.title, fileName: o.file_name, hint: typeof o.hint === 'string' ? o.hint : '' };
}
