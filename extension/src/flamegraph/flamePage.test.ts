import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flamePageHtml, parseFlameAnswer } from './flamePage';

const parts = {
  cspSource: 'https://file+.vscode-resource.vscode-cdn.net',
  speedscopeJs: 'https://x/speedscope.js',
  speedscopeCss: 'https://x/speedscope.css',
  loaderJs: 'https://x/flame.js',
  loaderCss: 'https://x/flame.css',
  title: 'Flame graph: <norm>',
  nonce: 'abc',
};

describe('the flame graph page', () => {
  it('loads OpLens’s loader before speedscope, both with the nonce; inline styles allowed, nothing from the network', () => {
    const html = flamePageHtml(parts);
    assert.ok(html.indexOf('flame.js') < html.indexOf('speedscope.js'));
    assert.equal(html.match(/<script nonce="abc" src=/g)?.length, 2);
    assert.match(html, /style-src https:\/\/file\+\.vscode-resource\.vscode-cdn\.net 'unsafe-inline'/);
    assert.match(html, /default-src 'none'/);
    assert.doesNotMatch(html, /script-src[^;]*('unsafe-inline'|'unsafe-eval')/);
    assert.match(html, /<title>Flame graph: &lt;norm&gt;<\/title>/);
  });

  it('reads oplens.flameGraph’s answer and refuses what is not one', () => {
    const profile = { $schema: 'https://www.speedscope.app/file-format-schema.json', shared: { frames: [] }, profiles: [] };
    assert.deepEqual(parseFlameAnswer({ profile, title: 'T', file_name: 'r.speedscope.json', hint: 'H' }), {
      profile,
      title: 'T',
      fileName: 'r.speedscope.json',
      hint: 'H',
    });
    assert.equal(parseFlameAnswer({ profile: {}, title: 'T', file_name: 'f' }), undefined);
    assert.equal(parseFlameAnswer(null), undefined);
  });
});
