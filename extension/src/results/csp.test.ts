import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { contentSecurityPolicy, nonce, pageHtml } from './csp';

describe('webview Content Security Policy', () => {
  const page = pageHtml({
    cspSource: 'https://file+.vscode-resource.vscode-cdn.net',
    scriptUri: 'https://file+.vscode-resource.vscode-cdn.net/ext/dist/webview/results.js',
    styleUri: 'https://file+.vscode-resource.vscode-cdn.net/ext/dist/webview/results.css',
    title: 'OpLens <results>',
    nonce: 'abc123',
  });

  it("denies everything by default and allows scripts only by nonce", () => {
    const policy = contentSecurityPolicy('SRC', 'N');
    assert.ok(policy.startsWith("default-src 'none'"));
    assert.match(policy, /script-src 'nonce-N'/);
    assert.match(policy, /style-src SRC(;|$)/);
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:\/\/\*|\*/);
  });

  it('the page carries the policy, one nonce-bearing script, one stylesheet, no inline code', () => {
    assert.match(page, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; /);
    assert.equal((page.match(/<script /g) ?? []).length, 1);
    assert.match(page, /<script nonce="abc123" src="https:\/\/file\+\.vscode-resource/);
    assert.doesNotMatch(page, /style="/);
    assert.doesNotMatch(page, /<style/);
    assert.match(page, /<title>OpLens &lt;results&gt;<\/title>/);
  });

  it('nonces come from crypto: long and different each time', () => {
    const seen = new Set(Array.from({ length: 50 }, () => nonce()));
    assert.equal(seen.size, 50);
    assert.ok([...seen].every((n) => n.length >= 24));
  });
});
