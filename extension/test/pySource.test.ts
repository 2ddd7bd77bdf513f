import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRun } from '../src/core/parseRun';
import {
  enclosingFunction,
  listFunctions,
  logicalLines,
  placeRun,
  pySplitLines,
  requiredPositional,
  sourceSha256,
  topLevelFunctionNames,
} from '../src/core/pySource';
import { jsonFixture, readFixture, repoFile } from './fixtures';

interface ServerFunction {
  qualname: string;
  first_line: number;
  def_line: number;
  last_line: number;
  required_params: number;
  in_class: boolean;
  source_sha256: string;
}

describe('listFunctions agrees with the server (Python AST)', () => {
  // tricky.expected.json is what server/oplens/engine/target.py lists for tricky.py
  const text = readFixture('tricky.py');
  const expected = jsonFixture<ServerFunction[]>('tricky.expected.json');
  const found = listFunctions(text);

  it('lists the same functions, in order, with the same qualnames', () => {
    assert.deepEqual(
      found.map((f) => f.qualname),
      expected.map((f) => f.qualname),
    );
  });

  for (const want of expected) {
    it(`${want.qualname}: lines, parameters, hash`, () => {
      const fn = found.find((f) => f.qualname === want.qualname);
      assert.ok(fn);
      assert.equal(fn.firstLine, want.first_line, 'first line (decorators)');
      assert.equal(fn.defLine, want.def_line, 'def line');
      assert.equal(fn.lastLine, want.last_line, 'last line');
      assert.equal(fn.requiredParams, want.required_params, 'required positional parameters');
      assert.equal(fn.inClass, want.in_class, 'in a class');
      assert.equal(sourceSha256(text, fn.firstLine, fn.lastLine), want.source_sha256, 'source_sha256');
    });
  }

  it('the example module: three variants and the input factory', () => {
    const example = repoFile('examples', 'rmsnorm.py');
    const fns = listFunctions(example);
    assert.deepEqual(topLevelFunctionNames(fns), ['make_inputs', 'rmsnorm_naive', 'rmsnorm_fused', '_compiled_for', 'rmsnorm_compiled']);
    const naive = fns.find((f) => f.qualname === 'rmsnorm_naive');
    assert.equal(naive?.requiredParams, 2);
    assert.equal(naive?.params, 'x: torch.Tensor, w: torch.Tensor');
  });
});

describe('enclosingFunction', () => {
  const text = readFixture('tricky.py');
  const fns = listFunctions(text);

  it('finds the innermost function around a line', () => {
    assert.equal(enclosingFunction(fns, 52)?.qualname, 'Block.forward.helper');
    assert.equal(enclosingFunction(fns, 54)?.qualname, 'Block.forward');
    assert.equal(enclosingFunction(fns, 50)?.qualname, 'Block.forward');
  });

  it('a decorator line belongs to its function', () => {
    assert.equal(enclosingFunction(fns, 18)?.qualname, 'decorated');
    assert.equal(enclosingFunction(fns, 56)?.qualname, 'Block.static');
  });

  it('outside every function: none', () => {
    assert.equal(enclosingFunction(fns, 1), undefined);
    assert.equal(enclosingFunction(fns, 43), undefined); // class Block line
    assert.equal(enclosingFunction(fns, 67), undefined); // only_on_cuda: not listed by the server either
  });
});

describe('requiredPositional', () => {
  const cases: [string, number][] = [
    ['', 0],
    ['x', 1],
    ['self, x', 2],
    ['x, y=2, *args, z, **kw', 1],
    ['a, b=(1, 2), /, c=3, *, d', 1],
    ['x: dict[str, int] = {"a": 1, "b": 2}', 0],
    ["s=',', t", 1],
    ['*, k', 0],
    ['**kw', 0],
    ['q, /, r, s=3', 2],
    ['f=lambda a, b=1: a', 0],
  ];
  for (const [params, n] of cases) {
    it(`(${params}) → ${n}`, () => assert.equal(requiredPositional(params), n));
  }
});

describe('logicalLines', () => {
  it('joins bracketed, continued and triple-quoted lines; skips blanks and comments', () => {
    const lines = logicalLines('a = (1,\n     2)\n\n# c\nb = 1 \\\n  + 2\ns = """\nx\n"""\n');
    assert.deepEqual(
      lines.map((l) => [l.start, l.end]),
      [
        [0, 1],
        [4, 5],
        [6, 8],
      ],
    );
  });

  it('a "#" inside a string is not a comment', () => {
    const [line] = logicalLines('u = "a#b"  # real comment\n');
    assert.equal(line?.text, 'u = "a#b"  ');
  });
});

describe('pySplitLines and sourceSha256', () => {
  it('splits like str.splitlines()', () => {
    assert.deepEqual(pySplitLines('a\nb\r\nc\rd\x0ce\u2028f\n'), ['a', 'b', 'c', 'd', 'e', 'f']);
    assert.deepEqual(pySplitLines(''), []);
    assert.deepEqual(pySplitLines('a\n\n'), ['a', '']);
  });
});

describe('placeRun', () => {
  const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
  const example = repoFile('examples', 'rmsnorm.py');

  it('a run of the unchanged function is fresh, in place', () => {
    assert.deepEqual(placeRun(example, listFunctions(example), run.target), { shift: 0 });
  });

  it('lines added above move it', () => {
    const moved = '# one\n# two\n' + example;
    assert.deepEqual(placeRun(moved, listFunctions(moved), run.target), { shift: 2 });
  });

  it('an edit inside the function makes it stale', () => {
    const edited = example.replace('x_sq = x * x', 'x_sq = x.square()');
    assert.equal(placeRun(edited, listFunctions(edited), run.target), undefined);
  });

  it('a function gone (renamed) has no place', () => {
    const renamed = example.replace('def rmsnorm_naive(', 'def rmsnorm_plain(');
    assert.equal(placeRun(renamed, listFunctions(renamed), run.target), undefined);
  });
});
