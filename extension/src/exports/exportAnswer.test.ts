import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXPORT_CHOICES, externalPath, parseExportAnswer } from './exportAnswer';

describe('oplens.export\'s answer', () => {
  it('reads the path, the format and how to open it', () => {
    const a = parseExportAnswer({ path: '/ws/.oplens/runs/r/exports/r.perfetto.json.gz', uri: 'file:///ws/x', format: 'perfetto', opens_in: 'open it in Perfetto', folder: false, notes: ['the run: no tables', 3] });
    assert.deepEqual(a, { path: '/ws/.oplens/runs/r/exports/r.perfetto.json.gz', uri: 'file:///ws/x', format: 'perfetto', opensIn: 'open it in Perfetto', folder: false, notes: ['the run: no tables'] });
  });

  it('refuses what is not one', () => {
    assert.equal(parseExportAnswer(null), undefined);
    assert.equal(parseExportAnswer({ path: 3 }), undefined);
  });

  it('offers the three formats the server writes', () => {
    assert.deepEqual(EXPORT_CHOICES.map((c) => c.format), ['perfetto', 'speedscope', 'tensorboard']);
  });
});

describe('Open in Perfetto: the page\'s external address', () => {
  it('keeps the page\'s path where the mapping kept it (VS Code desktop, a forwarded port)', () => {
    assert.equal(externalPath('/tok3n/', '/tok3n/'), '/tok3n/');
  });

  it('puts it back after a path proxy that keeps only the port (code-server\'s /proxy/<port>/)', () => {
    assert.equal(externalPath('/tok3n/', '/proxy/33851/'), '/proxy/33851/tok3n/');
    assert.equal(externalPath('/tok3n/', '/proxy/33851'), '/proxy/33851/tok3n/');
  });

  it('leaves a page at the root alone', () => {
    assert.equal(externalPath('/', '/proxy/33851/'), '/proxy/33851/');
  });
});
