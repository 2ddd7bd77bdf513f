import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXPLORER_PORTS, NEURON_MODES, SERVER_SETTINGS } from '../../shared/generated/settings';
import { SETTINGS_SECTION } from '../../shared/names';
import { manifestSettings, repoFile, type ManifestConfiguration } from '../../test/fixtures';
import { captureOptions, DEFAULTS, initializationOptions, readSettings, requestOptions, serverArgs } from './settings';

function from(values: Record<string, unknown>): ReturnType<typeof readSettings> {
  return readSettings((key) => values[key]);
}

describe('readSettings', () => {
  it('defaults when nothing is set', () => {
    const { settings, problems } = from({});
    assert.deepEqual(settings, DEFAULTS);
    assert.deepEqual(problems, []);
  });

  it('reads every key of the issue', () => {
    const { settings, problems } = from({
      pythonPath: ' /venv/bin/python ',
      backend: 'neuron',
      warmup: 5,
      iterations: 50,
      timeoutSeconds: 600,
      hintThreshold: 2.5,
      heat: 'line',
      heatBy: 'headroom',
      'server.url': 'ws://localhost:8765',
      'server.tokenFile': '~/.oplens/ws-token',
      pathMappings: [{ local: '/Users/me/p', host: '/home/ubuntu/p' }],
      'explorer.uiPort': 4001,
      'explorer.apiPort': 4002,
      runsDirectory: '/data/runs',
      captureSkip: 0,
      captureCalls: 4,
      captureStop: false,
      lenses: 'profiled',
    });
    assert.deepEqual(problems, []);
    assert.equal(settings.lenses, 'profiled');
    assert.deepEqual(settings.capture, { skip: 0, calls: 4, stop: false });
    assert.equal(settings.pythonPath, '/venv/bin/python');
    assert.equal(settings.backend, 'neuron');
    assert.equal(settings.heat, 'line');
    assert.equal(settings.heatBy, 'headroom');
    assert.deepEqual(settings.server, { url: 'ws://localhost:8765', tokenFile: '~/.oplens/ws-token' });
    assert.deepEqual(settings.explorer, { uiPort: 4001, apiPort: 4002 });
    assert.equal(settings.pathMappings.length, 1);
  });

  it('a bad value falls back to its default with a message naming it', () => {
    const { settings, problems } = from({ backend: 'tpu', iterations: 0, warmup: 1.5, hintThreshold: 101, 'explorer.uiPort': 70000, pathMappings: 'x' });
    assert.equal(settings.backend, 'auto');
    assert.equal(settings.iterations, 20);
    assert.equal(settings.warmup, 3);
    assert.equal(settings.hintThreshold, 1);
    assert.equal(settings.explorer.uiPort, 3001);
    assert.deepEqual(settings.pathMappings, []);
    assert.equal(problems.length, 6);
    assert.ok(problems.some((p) => p.startsWith('oplens.backend should be one of auto, cpu, cuda, neuron')));
  });

  it('importStrategy: the bundled server unless the environment is asked for', () => {
    assert.equal(DEFAULTS.importStrategy, 'useBundled');
    assert.equal(from({ importStrategy: 'fromEnvironment' }).settings.importStrategy, 'fromEnvironment');
    const { settings, problems } = from({ importStrategy: 'bundled' });
    assert.equal(settings.importStrategy, 'useBundled');
    assert.deepEqual(problems, ['oplens.importStrategy should be one of useBundled, fromEnvironment; using "useBundled"']);
  });

  it('the capture settings: bad values fall back too', () => {
    const { settings, problems } = from({ captureSkip: -1, captureCalls: 0, captureStop: 'yes' });
    assert.deepEqual(settings.capture, DEFAULTS.capture);
    assert.deepEqual(problems, [
      'oplens.captureSkip should be an integer ≥ 0; using 3',
      'oplens.captureCalls should be an integer ≥ 1; using 10',
      'oplens.captureStop should be true or false; using true',
    ]);
  });

  it('timeoutSeconds: any number above 0, as the server takes it', () => {
    assert.equal(from({ timeoutSeconds: 0.5 }).settings.timeoutSeconds, 0.5);
    const { settings, problems } = from({ timeoutSeconds: 0 });
    assert.equal(settings.timeoutSeconds, 300);
    assert.deepEqual(problems, ['oplens.timeoutSeconds should be a number > 0; using 300']);
  });

  it('lenses: all, profiled or off, else all with a message', () => {
    assert.equal(DEFAULTS.lenses, 'all');
    assert.equal(from({ lenses: 'off' }).settings.lenses, 'off');
    const { settings, problems } = from({ lenses: 'some' });
    assert.equal(settings.lenses, 'all');
    assert.deepEqual(problems, ['oplens.lenses should be one of all, profiled, off; using "all"']);
  });

  it('heatBy: time or headroom, else time with a message', () => {
    const { settings, problems } = from({ heatBy: 'flops' });
    assert.equal(settings.heatBy, 'time');
    assert.deepEqual(problems, ['oplens.heatBy should be one of time, headroom; using "time"']);
  });

  it('a server URL must be ws:// or wss://', () => {
    const { settings, problems } = from({ 'server.url': 'http://localhost:8765' });
    assert.equal(settings.server.url, '');
    assert.match(problems[0] ?? '', /ws:\/\//);
  });
});

describe('what reaches the server', () => {
  const { settings } = from({
    backend: 'cuda',
    warmup: 1,
    iterations: 7,
    timeoutSeconds: 60,
    hintThreshold: 3,
    pathMappings: [{ local: '/a', host: '/b' }],
    runsDirectory: '/r',
    captureSkip: 2,
    captureCalls: 5,
    lenses: 'off',
  });

  it('initialization options: the keys the server reads', () => {
    assert.deepEqual(initializationOptions(settings), {
      pathMappings: [{ local: '/a', host: '/b' }],
      hintThreshold: 3,
      lenses: 'off',
      backend: 'cuda',
      warmup: 1,
      iterations: 7,
      timeoutSeconds: 60,
      captureSkip: 2,
      captureCalls: 5,
      captureStop: true,
      explorer: { uiPort: 3001, apiPort: 3002 },
    });
  });

  it('Neuron options: only what the user set, checked', () => {
    const set = from({ 'neuron.modes': ['DEVICE', 'CPU_UTIL'], 'neuron.captureEnabledForNc': '0-1', 'neuron.maxEventsPerNc': 2000000 });
    assert.deepEqual(initializationOptions(set.settings).neuron, {
      modes: ['DEVICE', 'CPU_UTIL'], captureEnabledForNc: '0-1', maxEventsPerNc: 2000000,
    });
    const flags = from({ 'neuron.exact': true, 'neuron.measured': true, 'neuron.debugInfo': true, 'neuron.withStack': false });
    assert.deepEqual(initializationOptions(flags.settings).neuron, { exact: true, measured: true, debugInfo: true, withStack: false });
    const unset = from({ 'neuron.exact': false, 'neuron.measured': false, 'neuron.debugInfo': false, 'neuron.withStack': true });
    assert.equal(initializationOptions(unset.settings).neuron, undefined); // the server's defaults stand
    const bad = from({ 'neuron.modes': ['GPU'] });
    assert.equal(initializationOptions(bad.settings).neuron, undefined);
    assert.match(bad.problems[0] ?? '', /neuron\.modes/);
  });

  it('per-request options (no restart needed)', () => {
    assert.deepEqual(requestOptions(settings), { backend: 'cuda', warmup: 1, iters: 7, timeoutSeconds: 60 });
    // a capture in a program: skip/calls/stop instead of warmup/iters
    assert.deepEqual(captureOptions(settings), { backend: 'cuda', skip: 2, calls: 5, stop: true, timeoutSeconds: 60 });
  });

  it('the server command line', () => {
    assert.deepEqual(serverArgs(settings), ['-m', 'oplens', 'serve', '--stdio', '--out', '/r']);
    assert.deepEqual(serverArgs(DEFAULTS), ['-m', 'oplens', 'serve', '--stdio']);
  });
});

describe('the settings the server reads too: one default and one rule (generated from oplens.lsp.settings)', () => {
  type Property = {
    type?: unknown;
    default?: unknown;
    enum?: string[];
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    items?: { enum?: string[] };
  };
  const manifest = JSON.parse(repoFile('package.json')) as { contributes: { configuration: ManifestConfiguration<Property> } };
  const props = manifestSettings(manifest.contributes.configuration);

  it('the editor defaults to what the server defaults to (the CLI’s backend too: auto)', () => {
    assert.equal(DEFAULTS.backend, 'auto');
    const ours: Record<string, unknown> = {
      pathMappings: DEFAULTS.pathMappings,
      hintThreshold: DEFAULTS.hintThreshold,
      backend: DEFAULTS.backend,
      warmup: DEFAULTS.warmup,
      iterations: DEFAULTS.iterations,
      timeoutSeconds: DEFAULTS.timeoutSeconds,
      captureSkip: DEFAULTS.capture.skip,
      captureCalls: DEFAULTS.capture.calls,
      captureStop: DEFAULTS.capture.stop,
      lenses: DEFAULTS.lenses,
    };
    assert.deepEqual(Object.keys(ours).sort(), Object.keys(SERVER_SETTINGS).sort(), 'every server setting has an editor setting');
    for (const [key, rule] of Object.entries(SERVER_SETTINGS)) {
      assert.deepEqual(ours[key], rule.default, key);
    }
    assert.deepEqual(DEFAULTS.explorer, EXPLORER_PORTS);
  });

  it('package.json states each one’s type, default and bounds as the server does', () => {
    for (const [key, rule] of Object.entries(SERVER_SETTINGS)) {
      const prop = props[`${SETTINGS_SECTION}.${key}`];
      assert.ok(prop, `package.json lacks ${SETTINGS_SECTION}.${key}`);
      const { type, default: value, enum: values, minimum, maximum, exclusiveMinimum } = prop;
      const stated = Object.fromEntries(
        Object.entries({ type, default: value, enum: values, minimum, maximum, exclusiveMinimum }).filter(([, v]) => v !== undefined),
      );
      assert.deepEqual(stated, rule, `${SETTINGS_SECTION}.${key}`);
    }
    assert.deepEqual(props[`${SETTINGS_SECTION}.explorer.uiPort`]?.default, EXPLORER_PORTS.uiPort);
    assert.deepEqual(props[`${SETTINGS_SECTION}.explorer.apiPort`]?.default, EXPLORER_PORTS.apiPort);
  });

  it('package.json offers the Neuron modes of the Neuron backend', () => {
    assert.deepEqual(props[`${SETTINGS_SECTION}.neuron.modes`]?.items?.enum, [...NEURON_MODES]);
  });
});
