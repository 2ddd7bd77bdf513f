import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFixture } from '../../test/fixtures';
import { parseRun } from '../runs/parseRun';
import {
  DocumentIndex,
  DocumentParseError,
  enclosingFunction,
  isCurrent,
  isDrawable,
  parseDocumentInfo,
  physicalLines,
  placeRun,
  topLevelFunctionNames,
  type DocFunction,
  type DocumentInfo,
  type PlaceableRun,
} from './documentIndex';

// document.expected.json: oplens/document notifications as the server writes them (make_fixtures.py)
type Served = 'tricky' | 'syntaxError' | 'fresh' | 'moved' | 'stale';
const served = jsonFixture<Record<Served, unknown>>('document.expected.json');
const { functions } = served.tricky as { functions: DocFunction[] };
const URI = 'file:///ws/tricky.py';

function doc(version: number | null, extra: Partial<DocumentInfo> = {}): DocumentInfo {
  return parseDocumentInfo({ uri: URI, version, parseError: null, functions, runs: [], ...extra });
}

function run(id: string, qualname: string, sha = 'abc', first = 50, last = 54): PlaceableRun {
  return { run_id: id, target: { qualname, first_line: first, last_line: last, source_sha256: sha } };
}

describe('parseDocumentInfo (oplens/document, oplens.functions)', () => {
  it("reads the server's notification for tricky.py field for field", () => {
    assert.deepEqual(parseDocumentInfo(served.tricky), served.tricky);
    const info = doc(3);
    assert.deepEqual(info.functions, functions);
    assert.deepEqual(
      info.functions.map((f) => f.qualname),
      ['make_inputs', 'decorated', 'multi_line_signature', 'Block.__init__', 'Block.forward', 'Block.forward.helper', 'Block.static', 'Block.Inner.method', 'one_liner', 'outer', 'outer.inner', 'last'],
    );
    const forward = info.functions.find((f) => f.qualname === 'Block.forward');
    assert.deepEqual([forward?.name, forward?.params, forward?.requiredParams, forward?.inClass], ['forward', 'self, x', 2, true]);
  });

  it("reads the server's notification for a file that does not parse", () => {
    const info = parseDocumentInfo(served.syntaxError);
    assert.deepEqual(info.functions, []);
    assert.match(info.parseError ?? '', /^line \d+: /);
  });

  it('reads runs and a parse error', () => {
    const info = parseDocumentInfo({
      uri: URI,
      version: null,
      parseError: 'line 3: invalid syntax',
      functions: [],
      runs: [{ runId: 'r1', qualname: 'f', state: 'moved', shift: 2 }],
    });
    assert.equal(info.version, null);
    assert.equal(info.parseError, 'line 3: invalid syntax');
    assert.deepEqual(info.runs, [{ runId: 'r1', qualname: 'f', state: 'moved', shift: 2 }]);
  });

  it('names the field that is wrong', () => {
    assert.throws(() => parseDocumentInfo({ uri: URI, version: 1, functions: {} }), /params\.functions should be a list/);
    assert.throws(() => parseDocumentInfo({ uri: URI, version: '1', functions: [] }), /params\.version should be an integer or null/);
    assert.throws(
      () => parseDocumentInfo({ uri: URI, version: 1, functions: [], runs: [{ runId: 'r', qualname: 'f', state: 'gone', shift: 0 }] }),
      (e: unknown) => e instanceof DocumentParseError && /params\.runs\[0\]\.state/.test(e.message),
    );
    assert.throws(() => parseDocumentInfo({ uri: URI, version: 1, functions: [{ qualname: 'f' }] }), /params\.functions\[0\]\.firstLine/);
  });
});

describe('DocumentIndex', () => {
  it('keeps the newest version and drops older notifications', () => {
    const index = new DocumentIndex();
    const seen: (number | null)[] = [];
    index.onDidChange((info) => seen.push(info.version));
    assert.ok(index.update(doc(5)));
    assert.ok(!index.update(doc(4)), 'an older version is dropped');
    assert.ok(index.update(doc(5, { runs: [{ runId: 'r1', qualname: 'f', state: 'fresh', shift: 0 }] })), 'the same version (a finished run) is kept');
    assert.ok(!index.update(doc(null)), 'the file on disk does not replace the editor text');
    assert.ok(index.update(doc(6)));
    assert.deepEqual(seen, [5, 5, 6]);
    assert.equal(index.get(URI)?.version, 6);
    assert.ok(index.isUpToDate(URI, 6));
    assert.ok(!index.isUpToDate(URI, 7), 'typed since: ask');
  });

  it('the file on disk is held until the editor text is known', () => {
    assert.ok(isCurrent(undefined, doc(null)));
    assert.ok(isCurrent(doc(null), doc(1)));
    assert.ok(isCurrent(doc(null), doc(null)));
    const index = new DocumentIndex();
    index.update(doc(null));
    assert.ok(!index.isUpToDate(URI, 1), 'a document on disk is not the open text');
  });

  it('forgets a document, or everything', () => {
    const index = new DocumentIndex();
    index.update(doc(1));
    index.delete(URI);
    assert.equal(index.get(URI), undefined);
    index.update(doc(9));
    index.clear();
    assert.ok(index.update(doc(1)), 'after a clear, any version is new');
  });
});

describe('enclosingFunction', () => {
  it('finds the innermost function around a line', () => {
    assert.equal(enclosingFunction(functions, 52)?.qualname, 'Block.forward.helper');
    assert.equal(enclosingFunction(functions, 54)?.qualname, 'Block.forward');
    assert.equal(enclosingFunction(functions, 50)?.qualname, 'Block.forward');
  });

  it('a decorator line belongs to its function', () => {
    assert.equal(enclosingFunction(functions, 18)?.qualname, 'decorated');
    assert.equal(enclosingFunction(functions, 56)?.qualname, 'Block.static');
  });

  it('outside every function: none', () => {
    assert.equal(enclosingFunction(functions, 1), undefined);
    assert.equal(enclosingFunction(functions, 43), undefined); // class Block line
    assert.equal(enclosingFunction(functions, 67), undefined); // only_on_cuda: the server does not list it
  });

  it('top-level names are the input factories a module may have', () => {
    assert.deepEqual(topLevelFunctionNames(functions), ['make_inputs', 'decorated', 'multi_line_signature', 'one_liner', 'outer', 'last']);
  });
});

describe('placeRun', () => {
  const runs = [
    { runId: 'r-fwd', qualname: 'Block.forward', state: 'moved' as const, shift: 3 },
    { runId: 'r-old', qualname: 'outer', state: 'stale' as const, shift: 0 },
  ];
  const info = doc(2, { runs });
  const known = new Map<string, PlaceableRun>([['r-fwd', run('r-fwd', 'Block.forward')]]);
  const lookup = (id: string): PlaceableRun | undefined => known.get(id);

  it('where the server places the run', () => {
    assert.deepEqual(placeRun(info, run('r-fwd', 'Block.forward'), lookup), { state: 'moved', shift: 3 });
    assert.deepEqual(placeRun(info, run('r-old', 'outer'), lookup), { state: 'stale', shift: 0 });
    assert.ok(isDrawable(placeRun(info, run('r-fwd', 'Block.forward'), lookup)));
    assert.ok(!isDrawable(placeRun(info, run('r-old', 'outer'), lookup)));
  });

  it('an older run of the same text sits where the named run sits', () => {
    assert.deepEqual(placeRun(info, run('r-earlier', 'Block.forward'), lookup), { state: 'moved', shift: 3 });
    assert.deepEqual(placeRun(info, run('r-earlier', 'Block.<locals>.forward'), lookup)?.shift, 3, 'qualnames with <locals>');
  });

  it('an older run of other text is stale', () => {
    assert.deepEqual(placeRun(info, run('r-edit', 'Block.forward', 'other'), lookup), { state: 'stale', shift: 0 });
    assert.deepEqual(placeRun(info, run('r-edit', 'Block.forward', 'abc', 49, 54), lookup), { state: 'stale', shift: 0 });
  });

  it('nothing known: no place', () => {
    assert.equal(placeRun(undefined, run('r-fwd', 'Block.forward'), lookup), undefined);
    assert.equal(placeRun(info, run('r-new', 'last'), lookup), undefined, 'a run the document does not name yet');
    assert.ok(!isDrawable(undefined));
  });
});

describe("the server's placements of a real run (examples/rmsnorm.py)", () => {
  const result = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

  it('the example module: the variants, their parameters, the input factory', () => {
    const example = parseDocumentInfo(served.fresh);
    assert.deepEqual(topLevelFunctionNames(example.functions), ['make_inputs', 'rmsnorm_naive', 'rmsnorm_fused', '_compiled_for', 'rmsnorm_compiled']);
    const naive = example.functions.find((f) => f.qualname === 'rmsnorm_naive');
    assert.deepEqual([naive?.params, naive?.requiredParams, naive?.inClass], ['x: torch.Tensor, w: torch.Tensor', 2, false]);
  });

  it('unchanged: fresh, in place', () => {
    assert.deepEqual(placeRun(parseDocumentInfo(served.fresh), result), { state: 'fresh', shift: 0 });
  });

  it('lines added above: moved with them', () => {
    assert.deepEqual(placeRun(parseDocumentInfo(served.moved), result), { state: 'moved', shift: 2 });
  });

  it('an edit inside the function: stale, not drawn', () => {
    const placed = placeRun(parseDocumentInfo(served.stale), result);
    assert.equal(placed?.state, 'stale');
    assert.ok(!isDrawable(placed));
  });
});

describe('physicalLines', () => {
  it('splits as VS Code counts lines', () => {
    assert.deepEqual(physicalLines('a\nb\r\nc\rd'), ['a', 'b', 'c', 'd']);
  });
});
