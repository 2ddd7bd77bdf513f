import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorText, isCellUri, lastCall, magicCode, profilableInCell, runInCellMessage } from './notebookCall';

const CELLS = [
  'import torch\n\ndef rmsnorm(x, w):\n    return x * torch.rsqrt((x * x).mean(-1, keepdim=True)) * w\n',
  'x, w = torch.randn(8, 128), torch.ones(128)\ny = rmsnorm(x, w)  # the first call',
  '%timeit rmsnorm(x, w)\n# rmsnorm(a, b) in a comment\nz = my_rmsnorm(x)\nprint(model.rmsnorm(x))',
  'model = Model()',
];

describe('lastCall: the statement to prefill, from the notebook', () => {
  it('is the last line that calls the function by its name, not a def, comment, other magic or another name', () => {
    assert.equal(lastCall(CELLS, 'rmsnorm'), 'y = rmsnorm(x, w)  # the first call');
    assert.equal(lastCall([...CELLS, 'out = rmsnorm(x * 2, w)'], 'rmsnorm'), 'out = rmsnorm(x * 2, w)');
  });

  it('takes the statement of an earlier %oplens line, options left out', () => {
    const cells = [...CELLS, '%load_ext oplens\n%oplens --iters 50 -f rmsnorm rmsnorm(x, w)'];
    assert.equal(lastCall(cells, 'rmsnorm'), 'rmsnorm(x, w)');
  });

  it('finds a method by its name; nothing where no cell calls it', () => {
    assert.equal(lastCall(['h = block.attend(q, k)'], 'Block.attend'), 'h = block.attend(q, k)');
    assert.equal(lastCall(CELLS, 'Block.forward'), undefined);
    assert.equal(lastCall([], 'rmsnorm'), undefined);
  });
});

describe('magicCode: the cell that runs it', () => {
  it('loads the extension, then the magic on the statement', () => {
    assert.equal(magicCode('y = rmsnorm(x, w)', 'rmsnorm'), '%load_ext oplens\n%oplens y = rmsnorm(x, w)');
  });

  it('names a top-level function the statement does not call itself', () => {
    assert.equal(magicCode('train_step(batch)', 'rmsnorm'), '%load_ext oplens\n%oplens -f rmsnorm train_step(batch)');
    assert.equal(magicCode('model(x)', 'Block.forward'), '%load_ext oplens\n%oplens model(x)'); // its expression is the user's to add
  });

  it('is told on one line where no kernel can run it', () => {
    assert.match(runInCellMessage('%load_ext oplens\n%oplens f(x)'), /run this in a cell.*%load_ext oplens ; %oplens f\(x\)/);
  });
});

describe('cells', () => {
  it('are told by their URI scheme; a %%oplens cell is not asked for from the editor', () => {
    assert.equal(isCellUri('vscode-notebook-cell:/home/u/nb.ipynb#W0sZmlsZQ%3D%3D'), true);
    assert.equal(isCellUri('file:///home/u/nb.py'), false);
    assert.equal(profilableInCell('<cell>'), false);
    assert.equal(profilableInCell('rmsnorm'), true);
  });

  it("reads a kernel's error output", () => {
    assert.equal(errorText('{"name":"NameError","message":"name \'x\' is not defined","stack":"..."}'), "NameError: name 'x' is not defined");
    assert.equal(errorText('not json'), 'not json');
  });
});
