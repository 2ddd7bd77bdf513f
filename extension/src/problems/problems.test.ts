import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ERROR_KIND } from '../../shared/generated/errors';
import {
  describeCaptureError,
  describeProfileError,
  describeServerExit,
  describeWsFailure,
  diagnosePreflight,
  installOplensCommand,
  isConnectionLost,
  parsePreflight,
  shellQuote,
  type Action,
  type InstallHints,
} from './problems';

const hints: InstallHints = { python: '/home/me/venv/bin/python', origin: 'oplens.pythonPath', pythonExtension: false };
const kinds = (actions: Action[]): string[] => actions.map((a) => a.kind);

function report(fields: Record<string, unknown>): string {
  return JSON.stringify({ python: '3.11.9', executable: '/home/me/venv/bin/python', torch: '2.13.0', oplens: '0.1.0', oplens_error: null, ...fields });
}

describe('the interpreter check', () => {
  it('an interpreter that is not there: fatal, offers to choose another', () => {
    const v = diagnosePreflight({ spawnError: 'ENOENT', exitCode: null, stdout: '', stderr: '' }, hints);
    assert.equal(v.fatal, true);
    assert.match(v.problem?.message ?? '', /was not found/);
    assert.deepEqual(kinds(v.problem?.actions ?? []), ['openSettings']);
    const withExt = diagnosePreflight({ spawnError: 'ENOENT', exitCode: null, stdout: '', stderr: '' }, { ...hints, pythonExtension: true });
    assert.deepEqual(kinds(withExt.problem?.actions ?? []), ['selectInterpreter', 'openSettings']);
  });

  it('no oplens: fatal, offers the pip install command', () => {
    const v = diagnosePreflight({ exitCode: 0, stdout: report({ oplens: null, oplens_error: "ModuleNotFoundError: No module named 'oplens'" }), stderr: '' }, hints);
    assert.equal(v.fatal, true);
    assert.match(v.problem?.message ?? '', /does not have the oplens package/);
    const run = v.problem?.actions.find((a) => a.kind === 'runInTerminal');
    assert.equal(run?.kind === 'runInTerminal' ? run.command : '', '/home/me/venv/bin/python -m pip install oplens');
  });

  it('in the OpLens source tree, the install is editable', () => {
    assert.equal(installOplensCommand({ ...hints, sourceTree: '/work/my oplens' }), "/home/me/venv/bin/python -m pip install -e '/work/my oplens'");
  });

  it('a broken oplens install says why', () => {
    const v = diagnosePreflight({ exitCode: 0, stdout: report({ oplens: null, oplens_error: "ImportError: cannot import name 'x' from 'pygls'" }), stderr: '' }, hints);
    assert.match(v.problem?.message ?? '', /does not import .*pygls/);
  });

  it('no oplens, with the bundle: installs from its wheels (no registry) and offers the bundled server', () => {
    const h: InstallHints = { ...hints, bundle: { wheels: '/ext/bundled/wheels', version: '0.1.0' }, bundled: false };
    const command = '/home/me/venv/bin/python -m pip install --no-index --find-links /ext/bundled/wheels oplens==0.1.0';
    assert.equal(installOplensCommand(h), command);
    const v = diagnosePreflight({ exitCode: 0, stdout: report({ oplens: null, oplens_error: "ModuleNotFoundError: No module named 'oplens'" }), stderr: '' }, h);
    assert.equal(v.fatal, true);
    assert.deepEqual(v.problem?.actions.slice(0, 3), [
      { kind: 'installOplens', title: 'Install OpLens' },
      { kind: 'copy', title: 'Copy Command', text: command },
      { kind: 'openSettings', title: 'Use the Bundled Server', setting: 'oplens.importStrategy' },
    ]);
    assert.match(describeServerExit(1, null, "ModuleNotFoundError: No module named 'pygls'", h).actions[0]?.kind ?? '', /installOplens/);
  });

  it('no torch: a warning (the server starts; profiles need torch) with the command for the device the host has', () => {
    const torchInstall = (backend: string, title: string, seen: string, command: string): string =>
      report({ torch: null, torch_install: { backend, title, seen, command } });
    const neuron = "/venv/bin/python -m pip install 'torch-neuronx==2.13.*' --extra-index-url https://pip.repos.neuron.amazonaws.com";
    const v = diagnosePreflight({ exitCode: 0, stdout: torchInstall('neuron', 'Neuron', '/dev/neuron0', neuron), stderr: '' }, hints);
    assert.equal(v.fatal, false);
    assert.equal(v.problem?.severity, 'warning');
    assert.equal(
      v.problem?.message,
      `OpLens: the interpreter /home/me/venv/bin/python (Python 3.11.9) has no PyTorch, so profiles cannot run. This host has a Neuron device (/dev/neuron0): install the Neuron build with: ${neuron}`,
    );
    assert.deepEqual(v.problem?.actions.slice(0, 2), [
      { kind: 'runInTerminal', title: 'Install in Terminal', command: neuron },
      { kind: 'copy', title: 'Copy Command', text: neuron },
    ]);
    const gpu = diagnosePreflight({ exitCode: 0, stdout: torchInstall('cuda', 'CUDA', '/dev/nvidiactl', '/venv/bin/python -m pip install torch'), stderr: '' }, hints);
    assert.match(gpu.problem?.message ?? '', /a CUDA device \(\/dev\/nvidiactl\): install the CUDA build with: \/venv\/bin\/python -m pip install torch$/);
    const cpu = '/venv/bin/python -m pip install torch --index-url https://download.pytorch.org/whl/cpu';
    const plain = diagnosePreflight({ exitCode: 0, stdout: torchInstall('cpu', 'CPU', '', cpu), stderr: '' }, hints);
    assert.match(plain.problem?.message ?? '', /no Neuron or NVIDIA device: install the CPU build with: .*whl\/cpu$/);
  });

  it('no torch, and an OpLens too old to say which build: no command (never a guessed CPU wheel)', () => {
    const v = diagnosePreflight({ exitCode: 0, stdout: report({ torch: null }), stderr: '' }, hints);
    assert.match(v.problem?.message ?? '', /no PyTorch.*pytorch.org\/get-started\/locally/);
    assert.equal(v.problem?.actions.some((a) => a.kind === 'runInTerminal' || a.kind === 'copy'), false);
  });

  it('all present: no problem, and the report is read', () => {
    const v = diagnosePreflight({ exitCode: 0, stdout: 'noise\n' + report({}), stderr: '' }, hints);
    assert.equal(v.problem, undefined);
    assert.equal(v.fatal, false);
    assert.equal(v.report?.torch, '2.13.0');
  });

  it('not a Python at all: fatal, with its output', () => {
    const v = diagnosePreflight({ exitCode: 2, stdout: '', stderr: 'usage: node ...' }, hints);
    assert.equal(v.fatal, true);
    assert.equal(v.problem?.detail, 'usage: node ...');
  });

  it('parsePreflight takes the last JSON line', () => {
    assert.equal(parsePreflight('x\n{"python": "3.12.1"}\n')?.python, '3.12.1');
    assert.equal(parsePreflight('garbage'), undefined);
  });
});

describe('the server process', () => {
  it('a missing module after start: install command', () => {
    const p = describeServerExit(1, null, "Traceback...\nModuleNotFoundError: No module named 'pygls'\n", hints);
    assert.match(p.message, /lacks the Python module 'pygls'/);
    assert.deepEqual(kinds(p.actions), ['runInTerminal', 'restartServer', 'showOutput']);
  });

  it('a crash: restart, with the last line of stderr', () => {
    const p = describeServerExit(null, 'SIGKILL', 'started\nKilled\n');
    assert.match(p.message, /was killed \(SIGKILL\): Killed/);
    assert.deepEqual(kinds(p.actions), ['restartServer', 'showOutput']);
    assert.match(describeServerExit(3, null, '').message, /exited with code 3\./);
  });
});

describe('the WebSocket connection', () => {
  it('401: a token hint', () => {
    const p = describeWsFailure('ws://localhost:8765', { status: 401 }, 'token file ~/.oplens/ws-token');
    assert.match(p.message, /refused the token/);
    assert.match(p.message, /~\/.oplens\/ws-token/);
    assert.deepEqual(kinds(p.actions), ['setToken', 'openSettings']);
  });

  it('refused on localhost: the tunnel hint with the same port', () => {
    const p = describeWsFailure('ws://localhost:9000', { code: 'ECONNREFUSED' }, '');
    assert.match(p.message, /ssh -N -L 9000:localhost:9000 <host>/);
    assert.match(p.message, /oplens serve --ws 127.0.0.1:9000/);
    const copy = p.actions.find((a) => a.kind === 'copy');
    assert.equal(copy?.kind === 'copy' ? copy.text : '', 'ssh -N -L 9000:localhost:9000 <host>');
  });

  it('refused on a remote address: it listens on loopback, use a tunnel', () => {
    const p = describeWsFailure('ws://trn2-host:8765', { code: 'ECONNREFUSED' }, '');
    assert.match(p.message, /listens on loopback/);
  });

  it('403 (browser origin) and other statuses', () => {
    assert.match(describeWsFailure('ws://localhost:8765', { status: 403 }, '').message, /web page/);
    assert.match(describeWsFailure('ws://localhost:8765', { status: 404 }, '').message, /HTTP 404/);
  });
});

describe('errors of requests', () => {
  const userException = {
    code: -32803,
    message: 'f raised at m.py:4: ZeroDivisionError: division by zero',
    data: {
      kind: 'user_exception',
      message: 'f raised at m.py:4: ZeroDivisionError: division by zero',
      detail: 'Traceback (most recent call last):\n  File "m.py", line 4, in f\n',
      location: { file: '/ws/m.py', line: 4, function: 'f', uri: 'file:///ws/m.py' },
      exit_code: 3,
    },
  };

  it("the user's exception: go to the line, edit arguments, traceback in the output", () => {
    const p = describeProfileError(userException, 'f', 'cpu');
    assert.equal(p.message, 'OpLens: f raised at m.py:4: ZeroDivisionError: division by zero');
    assert.equal(p.detail, userException.data.detail);
    const reveal = p.actions[0];
    assert.deepEqual(reveal, { kind: 'revealLocation', title: 'Go to Line', uri: 'file:///ws/m.py', line: 4 });
    assert.deepEqual(kinds(p.actions), ['revealLocation', 'editArguments', 'showOutput']);
  });

  it('bad input: edit arguments', () => {
    const p = describeProfileError({ code: -32803, message: 'x', data: { kind: 'bad_input', message: "name 'make_input' is not defined", detail: '', location: {} } }, 'f', 'cpu');
    assert.deepEqual(kinds(p.actions), ['editArguments']);
  });

  it('backend unavailable: retry on the CPU unless already there', () => {
    const data = { kind: 'backend_unavailable', message: 'torch-neuronx is not installed', detail: '', location: {} };
    assert.deepEqual(kinds(describeProfileError({ message: 'x', data }, 'f', 'neuron').actions), ['retryWithBackend', 'openSettings']);
    assert.deepEqual(kinds(describeProfileError({ message: 'x', data }, 'f', 'cpu').actions), ['showOutput']);
    assert.deepEqual(kinds(describeProfileError({ message: 'x', data }, 'f', 'auto').actions), ['showOutput']); // auto ends on the CPU
    const retry = describeProfileError({ message: 'x', data }, 'f', 'cuda').actions[0];
    assert.deepEqual(retry, { kind: 'retryWithBackend', title: 'Profile on the CPU', backend: 'cpu' });
  });

  it('timeout: the two settings that help', () => {
    const p = describeProfileError({ message: 'x', data: { kind: 'timeout', message: 'f took longer than 300 s', detail: '', location: {} } }, 'f', 'cpu');
    assert.deepEqual(
      p.actions.map((a) => (a.kind === 'openSettings' ? a.setting : a.kind)),
      ['oplens.timeoutSeconds', 'oplens.iterations'],
    );
  });

  it('cancelled: information only', () => {
    const p = describeProfileError({ message: 'x', data: { kind: 'cancelled', message: 'cancelled', detail: '', location: {} } }, 'f', 'cpu');
    assert.equal(p.severity, 'info');
    assert.deepEqual(p.actions, []);
  });

  it("every kind of the engine's errors (ERROR_KIND, generated from records/errors.py) is told in its words", () => {
    for (const kind of Object.values(ERROR_KIND)) {
      const p = describeProfileError({ message: 'x', data: { kind, message: `it went wrong (${kind})`, detail: '', location: {} } }, 'f', 'neuron');
      assert.ok(kind === ERROR_KIND.cancelled ? p.severity === 'info' : p.message === `OpLens: it went wrong (${kind})`, kind);
    }
    // a kind of a newer server: its message, and the details
    const newer = describeProfileError({ message: 'x', data: { kind: 'quota', message: 'no quota left', detail: 'd', location: {} } }, 'f', 'cpu');
    assert.equal(newer.message, 'OpLens: no quota left');
    assert.deepEqual(kinds(newer.actions), ['showOutput']);
  });

  it('the server died under the request: restart', () => {
    const p = describeProfileError({ message: 'Pending response rejected since connection got disposed' }, 'f', 'cpu');
    assert.match(p.message, /server stopped/);
    assert.equal(p.actions[0]?.kind, 'restartServer');
    assert.ok(isConnectionLost({ message: 'Client is not running' }));
  });

  it('over a WebSocket a lost connection is the tunnel: wait for the reconnect, the run is kept on the host', () => {
    const lost = { message: 'Pending response rejected since connection got disposed' };
    const p = describeProfileError(lost, 'f', 'cpu', 'websocket');
    assert.equal(p.severity, 'warning');
    assert.match(p.message, /connection to the server dropped while profiling f/);
    assert.match(p.message, /shows here once reconnected \(nothing is re-run\)/);
    assert.deepEqual(kinds(p.actions), ['showOutput']); // no "Restart Server": it reconnects by itself
    const capture = describeCaptureError(lost, 'f', 'train.py', 'cpu', 'websocket');
    assert.match(capture.message, /once reconnected/);
  });

  it('a plain JSON-RPC error (no engine data) keeps its message', () => {
    const p = describeProfileError({ code: -32602, message: '/tmp/x.py is outside the workspace /ws' }, 'f', 'cpu');
    assert.match(p.message, /outside the workspace/);
  });
});

describe('shellQuote', () => {
  it('quotes only when needed', () => {
    assert.equal(shellQuote('/usr/bin/python3'), '/usr/bin/python3');
    assert.equal(shellQuote('/My Drive/python'), "'/My Drive/python'");
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
  });
});
