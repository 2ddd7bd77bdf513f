import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { describeCaptureError } from '../problems/problems';
import type { KeyValueStore } from '../settings/memento';
import { PathMap } from '../server/pathMap';
import {
  describeProgram,
  joinArgs,
  launchChoices,
  parseProgramLine,
  programForHost,
  programFromServer,
  programFromSetting,
  programPickItems,
  ProgramMemory,
  sbatchOptions,
  SLURM_STATE_KEY,
  SlurmMemory,
  whereItems,
  PROGRAM_STATE_KEY,
  splitArgs,
  substitute,
  type VariableContext,
} from './program';

const WS = '/home/me/proj';
const ctx: VariableContext = {
  workspaceFolder: WS,
  file: `${WS}/model/block.py`,
  env: { DATA: '/data/set', EMPTY: '' },
  userHome: '/home/me',
};

class MemoryState implements KeyValueStore {
  data = new Map<string, string>();
  get<T>(key: string): T | undefined {
    const raw = this.data.get(key);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }
  update(key: string, value: unknown): Promise<void> {
    this.data.set(key, JSON.stringify(value));
    return Promise.resolve();
  }
}

describe('splitArgs: a line split as a POSIX shell splits it', () => {
  it('blanks separate words; runs of blanks are one', () => {
    assert.deepEqual(splitArgs('  train.py --steps   30\t--lr 1e-3 '), ['train.py', '--steps', '30', '--lr', '1e-3']);
    assert.deepEqual(splitArgs(''), []);
    assert.deepEqual(splitArgs('   '), []);
  });

  it('quotes keep blanks; single quotes keep everything; a quoted empty word is a word', () => {
    assert.deepEqual(splitArgs(`--name "my run" --tag 'a b "c"' --empty ""`), ['--name', 'my run', '--tag', 'a b "c"', '--empty', '']);
    assert.deepEqual(splitArgs(`--msg="it's \\"x\\""`), ['--msg=it\'s "x"']);
    assert.deepEqual(splitArgs(`a'b'"c"d`), ['abcd']);
  });

  it('a backslash escapes the next character outside quotes; in double quotes only " \\ $ `', () => {
    assert.deepEqual(splitArgs('a\\ b c\\"d'), ['a b', 'c"d']);
    assert.deepEqual(splitArgs('"a\\nb" "c\\\\d"'), ['a\\nb', 'c\\d']);
  });

  it('an unclosed quote runs to the end', () => {
    assert.deepEqual(splitArgs(`--x "a b`), ['--x', 'a b']);
  });

  it('joinArgs quotes what splitArgs would split differently', () => {
    for (const words of [['train.py', '--steps', '30'], ['--name', 'my run', "it's", '']]) {
      assert.deepEqual(splitArgs(joinArgs(words)), words);
    }
    assert.equal(joinArgs(['train.py', '--name', 'my run']), `train.py --name 'my run'`);
  });
});

describe('substitute: VS Code variables', () => {
  it('workspace and file variables, the environment, the home folder', () => {
    const s = (v: string): string => substitute(v, ctx).text;
    assert.equal(s('${workspaceFolder}/train.py'), `${WS}/train.py`);
    assert.equal(s('${workspaceFolderBasename}'), 'proj');
    assert.equal(s('${file}'), `${WS}/model/block.py`);
    assert.equal(s('${fileDirname}'), `${WS}/model`);
    assert.equal(s('${fileBasename} ${fileBasenameNoExtension}'), 'block.py block');
    assert.equal(s('${relativeFile}'), path.join('model', 'block.py'));
    assert.equal(s('--data=${env:DATA}/train'), '--data=/data/set/train');
    assert.equal(s('${userHome}/.cache'), '/home/me/.cache');
  });

  it('an unset environment variable is empty, as in VS Code', () => {
    assert.deepEqual(substitute('x${env:NOPE}y${env:EMPTY}', ctx), { text: 'xy', unresolved: [] });
  });

  it('what cannot be resolved stays as written and is listed', () => {
    assert.deepEqual(substitute('${input:steps} ${command:pickArgs}', ctx), {
      text: '${input:steps} ${command:pickArgs}',
      unresolved: ['${input:steps}', '${command:pickArgs}'],
    });
    assert.deepEqual(substitute('${file}', { ...ctx, file: undefined }).unresolved, ['${file}']);
  });
});

describe('launchChoices: the Python launch configurations', () => {
  const configurations = [
    {
      name: 'Train block',
      type: 'debugpy',
      request: 'launch',
      program: '${workspaceFolder}/train_block.py',
      args: ['--steps', '30', '--data', '${env:DATA}'],
      cwd: '${workspaceFolder}',
      env: { TORCH_LOGS: 'graph_breaks', STEPS: 30 },
      console: 'integratedTerminal',
    },
    { name: 'String args', type: 'python', request: 'launch', program: '${file}', args: '--name "my run" --dir ${fileDirname}' },
    { name: 'Attach', type: 'debugpy', request: 'attach', connect: { host: 'localhost', port: 5678 } },
    { name: 'Node', type: 'node', request: 'launch', program: 'index.js' },
    {
      name: 'torchrun',
      type: 'debugpy',
      request: 'launch',
      module: 'torch.distributed.run',
      args: ['--nproc-per-node', '2', 'train.py', '--steps', '30'],
      python: '/opt/venv/bin/python',
    },
    { name: 'Pick', type: 'debugpy', request: 'launch', program: 'train.py', args: '${command:pickArgs}' },
    { name: 'Input', type: 'debugpy', request: 'launch', program: 'train.py', args: ['--steps', '${input:steps}'] },
    { name: 'Nothing', type: 'debugpy', request: 'launch' },
    'not an object',
  ];
  const { choices, skipped } = launchChoices(configurations, ctx);
  const byName = new Map(choices.map((c) => [c.name, c]));

  it('offers python and debugpy launch configurations only, saying why the others are left out', () => {
    assert.deepEqual(
      choices.map((c) => c.name),
      ['Train block', 'String args', 'torchrun', 'Pick', 'Input'],
    );
    const why = Object.fromEntries(skipped.map((s) => [s.name, s.why]));
    assert.match(why.Attach ?? '', /attach/);
    assert.match(why.Node ?? '', /not python or debugpy/);
    assert.match(why.Nothing ?? '', /neither "program" nor "module"/);
  });

  it('substitutes the variables of program, args, cwd and env (values as strings)', () => {
    assert.deepEqual(byName.get('Train block')?.spec, {
      program: `${WS}/train_block.py`,
      args: ['--steps', '30', '--data', '/data/set'],
      cwd: WS,
      env: { TORCH_LOGS: 'graph_breaks', STEPS: '30' },
    });
  });

  it('splits string args like a shell, then substitutes each word (a path with blanks stays one word)', () => {
    assert.deepEqual(byName.get('String args')?.spec, { program: `${WS}/model/block.py`, args: ['--name', 'my run', '--dir', `${WS}/model`] });
    const spaced = launchChoices([{ name: 'x', type: 'debugpy', request: 'launch', program: 'a.py', args: '--dir ${workspaceFolder}' }], {
      ...ctx,
      workspaceFolder: '/my proj',
    });
    assert.deepEqual(spaced.choices[0]?.spec.args, ['--dir', '/my proj']);
  });

  it('keeps a torchrun module configuration as is; notes the interpreter it does not use', () => {
    const c = byName.get('torchrun');
    assert.deepEqual(c?.spec, { module: 'torch.distributed.run', args: ['--nproc-per-node', '2', 'train.py', '--steps', '30'] });
    assert.deepEqual(c?.ignored, ['python']);
    assert.equal(programPickItems({ launch: [c!] })[0]?.description, 'launch.json · its python not used');
    assert.equal(describeProgram(c!.spec), '-m torch.distributed.run --nproc-per-node 2 train.py --steps 30');
  });

  it('${command:pickArgs} asks for the arguments; other unresolved variables are reported', () => {
    assert.equal(byName.get('Pick')?.asksArgs, true);
    assert.deepEqual(byName.get('Pick')?.spec.args, []);
    assert.deepEqual(byName.get('Input')?.unresolved, ['${input:steps}']);
    assert.equal(byName.get('Train block')?.asksArgs, false);
  });

  it('no configurations: nothing offered', () => {
    assert.deepEqual(launchChoices(undefined, ctx), { choices: [], skipped: [] });
    assert.deepEqual(launchChoices({}, ctx).choices, []);
  });
});

describe('parseProgramLine: what the input box takes', () => {
  it('a script and its arguments', () => {
    assert.deepEqual(parseProgramLine('train.py --steps 30'), { program: 'train.py', args: ['--steps', '30'] });
    assert.deepEqual(parseProgramLine('"my dir/train.py"'), { program: 'my dir/train.py', args: [] });
  });

  it('-m module and its arguments (torchrun as a module too)', () => {
    assert.deepEqual(parseProgramLine('-m pkg.train --lr 1e-3'), { module: 'pkg.train', args: ['--lr', '1e-3'] });
    assert.deepEqual(parseProgramLine('-m torch.distributed.run --nproc-per-node 2 train.py'), {
      module: 'torch.distributed.run',
      args: ['--nproc-per-node', '2', 'train.py'],
    });
  });

  it('a leading python is dropped', () => {
    assert.deepEqual(parseProgramLine('python train.py'), { program: 'train.py', args: [] });
    assert.deepEqual(parseProgramLine('/usr/bin/python3.11 -m pkg'), { module: 'pkg', args: [] });
  });

  it('variables, when given the context', () => {
    assert.deepEqual(parseProgramLine('${workspaceFolder}/train.py --data ${env:DATA}', ctx), {
      program: `${WS}/train.py`,
      args: ['--data', '/data/set'],
    });
  });

  it('says what is wrong', () => {
    assert.match(parseProgramLine('') as string, /give a script/);
    assert.match(parseProgramLine('python') as string, /give a script/);
    assert.match(parseProgramLine('-m') as string, /name the module/);
    assert.match(parseProgramLine('-m my-pkg') as string, /not a module name/);
    assert.match(parseProgramLine('-X dev train.py') as string, /not interpreter options/);
  });
});

describe('programFromSetting: oplens.program', () => {
  it('unset: undefined', () => {
    for (const raw of [undefined, null, '', {}]) {
      assert.equal(programFromSetting(raw, ctx), undefined);
    }
  });

  it('a line, as the input box takes it', () => {
    assert.deepEqual(programFromSetting('-m pkg.train --steps 5', ctx), { module: 'pkg.train', args: ['--steps', '5'] });
  });

  it('an object as a launch configuration has it', () => {
    assert.deepEqual(programFromSetting({ program: '${workspaceFolder}/t.py', args: '--a "b c"', cwd: 'sub', env: { X: '${env:DATA}' } }, ctx), {
      program: `${WS}/t.py`,
      args: ['--a', 'b c'],
      cwd: 'sub',
      env: { X: '/data/set' },
    });
  });

  it('a bad value: a message naming the setting', () => {
    assert.match(programFromSetting(42, ctx) as string, /oplens\.program should be/);
    assert.match(programFromSetting({ args: ['x'] }, ctx) as string, /oplens\.program: it has neither/);
    assert.match(programFromSetting({ program: 't.py', args: 3 }, ctx) as string, /"args" is neither/);
    assert.match(programFromSetting({ program: '${input:x}' }, ctx) as string, /cannot resolve/);
  });
});

describe('programForHost: paths inside the arguments as the server host sees them', () => {
  const spec = {
    program: '/Users/me/proj/train.py',
    args: ['--data', '/Users/me/proj/data', '--steps', '3'],
    cwd: '/Users/me/proj',
    env: { PYTHONPATH: '/Users/me/proj/src', MODE: 'x' },
  };

  it('maps path-valued arguments and environment values; the script and cwd are the server\'s to map (as URIs are)', () => {
    const map = new PathMap([{ local: '/Users/me/proj', host: '/home/ubuntu/proj' }]);
    assert.deepEqual(programForHost(spec, map), {
      program: '/Users/me/proj/train.py',
      args: ['--data', '/home/ubuntu/proj/data', '--steps', '3'],
      cwd: '/Users/me/proj',
      env: { PYTHONPATH: '/home/ubuntu/proj/src', MODE: 'x' },
    });
  });

  it('no mappings (the extension runs on the host): unchanged; relative paths stay relative', () => {
    assert.equal(programForHost(spec, new PathMap()), spec);
    const map = new PathMap([{ local: '/Users/me/proj', host: '/home/ubuntu/proj' }]);
    assert.deepEqual(programForHost({ program: 'train.py', args: [] }, map), { program: 'train.py', args: [] });
    assert.deepEqual(programForHost({ module: 'pkg.train' }, map), { module: 'pkg.train' });
  });
});

describe('the picker: remembered choice first, then launch.json, the setting, and Enter…', () => {
  const { choices } = launchChoices(
    [
      { name: 'A', type: 'debugpy', request: 'launch', program: 'a.py' },
      { name: 'B', type: 'debugpy', request: 'launch', module: 'pkg.b', args: ['-v'], cwd: '${workspaceFolder}/sub' },
    ],
    ctx,
  );
  const labels = (items: ReturnType<typeof programPickItems>): string[] => items.map((i) => `${i.label} [${i.description}]`);

  it('nothing remembered: the launch configurations, then Enter…', () => {
    const items = programPickItems({ launch: choices });
    assert.deepEqual(labels(items), ['A [launch.json]', 'B [launch.json]', 'Enter a script or module… []']);
    assert.equal(items[1]?.detail, `-m pkg.b -v  ·  in ${WS}/sub`);
  });

  it('paths inside the workspace folder are shown relative to it; the folder itself as the working directory is not shown', () => {
    const { choices: mine } = launchChoices(
      [
        { name: 'T', type: 'debugpy', request: 'launch', program: '${workspaceFolder}/train.py', args: ['--steps', '30'], cwd: '${workspaceFolder}' },
        { name: 'O', type: 'debugpy', request: 'launch', program: '/opt/other/run.py', cwd: '/opt/other' },
      ],
      ctx,
    );
    const items = programPickItems({ launch: [...mine, ...choices], folder: WS });
    assert.deepEqual(
      items.map((i) => i.detail),
      ['train.py --steps 30', '/opt/other/run.py  ·  in /opt/other', 'a.py', '-m pkg.b -v  ·  in sub', 'path/to/script.py ARGS, or -m package.module ARGS'],
    );
    assert.equal(describeProgram({ program: `${WS}/model/train.py`, args: ['my run'] }, WS), `model/train.py 'my run'`);
  });

  it('a remembered configuration comes first, marked last used', () => {
    const items = programPickItems({ launch: choices, remembered: { kind: 'launch', name: 'B' } });
    assert.deepEqual(labels(items), ['B [last used · launch.json]', 'A [launch.json]', 'Enter a script or module… []']);
  });

  it('a remembered line comes first; a remembered configuration since deleted is not offered', () => {
    assert.deepEqual(labels(programPickItems({ launch: choices, remembered: { kind: 'line', line: 'x.py --n 3' } })), [
      'x.py --n 3 [last used]',
      'A [launch.json]',
      'B [launch.json]',
      'Enter a script or module… []',
    ]);
    assert.deepEqual(labels(programPickItems({ launch: choices, remembered: { kind: 'launch', name: 'Gone' } }))[0], 'A [launch.json]');
  });

  it('the oplens.program setting is the default when nothing is remembered, else after the configurations', () => {
    const setting = { program: 'train.py', args: ['--steps', '3'] };
    assert.deepEqual(labels(programPickItems({ launch: choices, setting }))[0], 'train.py --steps 3 [oplens.program setting]');
    assert.deepEqual(labels(programPickItems({ launch: choices, setting, remembered: { kind: 'launch', name: 'A' } })), [
      'A [last used · launch.json]',
      'B [launch.json]',
      'train.py --steps 3 [oplens.program setting]',
      'Enter a script or module… []',
    ]);
  });

  it('no configurations, nothing remembered, no setting: only Enter…', () => {
    assert.deepEqual(
      programPickItems({ launch: [] }).map((i) => i.kind),
      ['enter'],
    );
  });
});

describe('ProgramMemory', () => {
  it('remembers the last choice per workspace state, and ignores what it cannot read', async () => {
    const state = new MemoryState();
    const memory = new ProgramMemory(state);
    assert.equal(memory.get(), undefined);
    await memory.remember({ kind: 'launch', name: 'Train block' });
    assert.deepEqual(new ProgramMemory(state).get(), { kind: 'launch', name: 'Train block' });
    await memory.remember({ kind: 'line', line: '-m pkg' });
    assert.deepEqual(memory.get(), { kind: 'line', line: '-m pkg' });
    await state.update(PROGRAM_STATE_KEY, { kind: 'launch' });
    assert.equal(memory.get(), undefined);
  });
});

describe('where the program runs: the host, or a Slurm job', () => {
  it('offers the remembered place first, with the last sbatch options', () => {
    assert.deepEqual(whereItems(undefined, '/usr/bin/sbatch').map((i) => i.slurm), [false, true]);
    const items = whereItems({ slurm: true, options: '-N2 --partition trn2' }, '/usr/bin/sbatch');
    assert.deepEqual(items.map((i) => i.slurm), [true, false]);
    assert.equal(items[0].description, 'sbatch -N2 --partition trn2');
    assert.match(items[0].detail, /\/usr\/bin\/sbatch/);
  });

  it('splits the sbatch options like a shell, and refuses a stray word first', () => {
    assert.deepEqual(sbatchOptions(' -N2 --partition trn2 --comment "two words" '), ['-N2', '--partition', 'trn2', '--comment', 'two words']);
    assert.deepEqual(sbatchOptions(''), []);
    assert.match(String(sbatchOptions('train.py -N2')), /"train.py" is not an sbatch option/);
  });

  it('remembers the choice per workspace state, and ignores what it cannot read', async () => {
    const state = new MemoryState();
    const memory = new SlurmMemory(state);
    assert.equal(memory.get(), undefined);
    await memory.remember({ slurm: true, options: '-N4' });
    assert.deepEqual(new SlurmMemory(state).get(), { slurm: true, options: '-N4' });
    await state.update(SLURM_STATE_KEY, { slurm: 'yes' });
    assert.equal(memory.get(), undefined);
  });
});

describe('describeCaptureError: a capture that failed, in the user\'s words', () => {
  const err = (kind: string, message: string, detail = '') => ({ code: -32603, message, data: { kind, message, detail } });

  it('never called: the engine\'s message, with choosing another program and the skip setting', () => {
    const p = describeCaptureError(err('not_called', 'the program never called Block.forward (0 calls seen)'), 'Block.forward', 'train.py', 'cpu');
    assert.equal(p.message, 'OpLens: the program never called Block.forward (0 calls seen)');
    assert.deepEqual(
      p.actions.map((a) => a.kind),
      ['pickProgram', 'openSettings', 'showOutput'],
    );
  });

  it('the program failed or died: its output first', () => {
    for (const kind of ['program_failed', 'crash']) {
      const p = describeCaptureError(err(kind, 'the program raised ValueError after 4 of 10 calls', 'runs kept: r1'), 'f', 'train.py', 'cpu');
      assert.equal(p.severity, 'error');
      assert.equal(p.detail, 'runs kept: r1');
      assert.equal(p.actions[0]?.kind, 'showOutput');
    }
  });

  it('a timeout points at the timeout and the number of calls', () => {
    const p = describeCaptureError(err('timeout', 'the program did not finish the capture within 300 s'), 'f', 'train.py', 'cpu');
    assert.deepEqual(
      p.actions.filter((a) => a.kind === 'openSettings').map((a) => (a as { setting: string }).setting),
      ['oplens.timeoutSeconds', 'oplens.captureCalls'],
    );
  });

  it('cancelled: said quietly; other kinds as a profile\'s', () => {
    const c = describeCaptureError(err('cancelled', 'cancelled'), 'f', 'train.py', 'cpu');
    assert.equal(c.severity, 'info');
    assert.match(c.message, /capturing f in train\.py was cancelled; the program was stopped/);
    // the request cancelled from the progress notification ($/cancelRequest): the same
    assert.deepEqual(describeCaptureError({ code: -32800, message: 'Request with id "7" is canceled' }, 'f', 'train.py', 'cpu'), c);
    const b = describeCaptureError(err('backend_unavailable', 'CUDA is not available'), 'f', 'train.py', 'cuda');
    assert.ok(b.actions.some((a) => a.kind === 'retryWithBackend'));
    const lost = describeCaptureError({ message: 'Connection got disposed.' }, 'f', 'train.py', 'cpu');
    assert.match(lost.message, /server stopped/);
  });
});

describe('programFromServer: the program of a server lens (▶ lines of an overview)', () => {
  it('takes a script or a module, with its arguments, folder and environment', () => {
    assert.deepEqual(programFromServer({ program: '/ws/train.py', args: ['12'], cwd: '/ws', env: { A: '1', B: 2 } }), {
      program: '/ws/train.py',
      args: ['12'],
      cwd: '/ws',
      env: { A: '1' },
    });
    assert.deepEqual(programFromServer({ module: 'pkg.train', args: [] }), { module: 'pkg.train', args: [] });
  });

  it('is undefined for anything else', () => {
    for (const v of [undefined, null, 'train.py', [], {}, { program: '' }, { program: 'a.py', args: [1] }]) {
      assert.equal(programFromServer(v), undefined, JSON.stringify(v));
    }
  });
});
