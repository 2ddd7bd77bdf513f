import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BACKEND_COMMANDS, OPEN_EXPLORER_COMMAND } from '../shared/names';
import { manifestSettings, repoFile, type ManifestConfiguration } from '../test/fixtures';
import { HAS_RUNS_CONTEXT, runOffersContext } from './runs/runContext';
import { DEFAULTS } from './settings/settings';

interface Manifest {
  name: string;
  version: string;
  main: string;
  engines: { vscode: string };
  extensionKind: string[];
  activationEvents: string[];
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    menus: Record<string, { command?: string; submenu?: string; when?: string; group?: string }[]>;
    submenus: { id: string; label: string }[];
    keybindings: { command: string; key: string; when?: string }[];
    configuration: ManifestConfiguration<{ default?: unknown }>;
  };
}

const manifest = JSON.parse(repoFile('package.json')) as Manifest;
const extensionSource = repoFile('extension', 'src', 'extension.ts');

describe('package.json (the manifest)', () => {
  it('has the commands of the issue, titled as a user reads them', () => {
    const titles = manifest.contributes.commands.map((c) => `${c.category}: ${c.title}`);
    for (const title of [
      'OpLens: Profile Function',
      'OpLens: Profile Function with Arguments…',
      'OpLens: Profile Function in Program…',
      'OpLens: Compare Functions…',
      'OpLens: Show Results',
      'OpLens: Open in Neuron Explorer',
      'OpLens: Clear Annotations',
      'OpLens: Restart Server',
      'OpLens: Show Output',
      'OpLens: Choose Backend…',
    ]) {
      assert.ok(titles.includes(title), title);
    }
  });

  it('the status item offers the backend pick, not the Settings editor', () => {
    const statusBar = repoFile('extension', 'src', 'status', 'statusBar.ts');
    assert.match(statusBar, /Choose Backend…', .*command: EXTENSION_COMMANDS\.chooseBackend/);
    assert.doesNotMatch(statusBar, /openSettings/);
  });

  it('registers every contributed command (one handler per EXTENSION_COMMANDS entry, checked by the type)', () => {
    assert.match(extensionSource, /const commands: Record<ExtensionCommand, /);
    assert.match(extensionSource, /registerCommand\(EXTENSION_COMMANDS\[name as ExtensionCommand\], run\)/);
    // that the manifest contributes exactly these, and none of the server's: names.test.ts
  });

  it('puts one OpLens submenu in the editor context menu of Python files, Profile Function first in it', () => {
    const menu = manifest.contributes.menus['editor/context'] ?? [];
    assert.deepEqual(menu.map((m) => [m.submenu, m.command, m.when]), [['oplens.editorContext', undefined, 'editorLangId == python']]);
    assert.deepEqual(manifest.contributes.submenus, [{ id: 'oplens.editorContext', label: 'OpLens' }]);
    const submenu = manifest.contributes.menus['oplens.editorContext'] ?? [];
    assert.deepEqual(
      submenu.map((m) => m.command),
      ['oplens.profileFunction', 'oplens.profileFunctionWithArguments', 'oplens.profileInProgram', 'oplens.compareFunctions', 'oplens.programOverview'],
    );
    assert.ok(submenu.every((m) => m.when === undefined && m.group), 'the submenu is shown only where its entry is');
    assert.ok(manifest.contributes.keybindings.some((k) => k.command === 'oplens.profileFunction'));
  });

  it('offers a command in the palette only where it applies', () => {
    const when = Object.fromEntries((manifest.contributes.menus.commandPalette ?? []).map((m) => [m.command, m.when]));
    const explorer = BACKEND_COMMANDS.find((c) => c.lspCommand === OPEN_EXPLORER_COMMAND);
    assert.equal(when['oplens.openInExplorer'], runOffersContext(explorer?.name ?? '?'), 'Neuron Explorer: on a Neuron run only');
    assert.equal(when['oplens.openTrace'], HAS_RUNS_CONTEXT);
    assert.equal(when['oplens.clearAnnotations'], HAS_RUNS_CONTEXT);
    assert.equal(when['oplens.setServerToken'], 'config.oplens.server.url', 'the WebSocket token: with a server URL');
    for (const command of ['oplens.profileFunction', 'oplens.profileInProgram', 'oplens.compareFunctions', 'oplens.programOverview']) {
      assert.equal(when[command], 'editorLangId == python', command);
    }
  });

  it('runs on the workspace host (Remote-SSH) and activates on Python', () => {
    assert.deepEqual(manifest.extensionKind, ['workspace']);
    assert.ok(manifest.activationEvents.includes('onLanguage:python'));
    assert.equal(manifest.main, './dist/extension.js');
  });

  it('has every setting of the issue, with the same defaults as the code', () => {
    const props = manifestSettings(manifest.contributes.configuration);
    const expected: Record<string, unknown> = {
      'oplens.pythonPath': DEFAULTS.pythonPath,
      'oplens.importStrategy': DEFAULTS.importStrategy,
      'oplens.backend': DEFAULTS.backend,
      'oplens.warmup': DEFAULTS.warmup,
      'oplens.iterations': DEFAULTS.iterations,
      'oplens.timeoutSeconds': DEFAULTS.timeoutSeconds,
      'oplens.hintThreshold': DEFAULTS.hintThreshold,
      'oplens.lenses': DEFAULTS.lenses,
      'oplens.heat': DEFAULTS.heat,
      'oplens.heatBy': DEFAULTS.heatBy,
      'oplens.server.url': DEFAULTS.server.url,
      'oplens.server.tokenFile': DEFAULTS.server.tokenFile,
      'oplens.pathMappings': DEFAULTS.pathMappings,
      'oplens.explorer.uiPort': DEFAULTS.explorer.uiPort,
      'oplens.explorer.apiPort': DEFAULTS.explorer.apiPort,
      'oplens.runsDirectory': DEFAULTS.runsDirectory,
      'oplens.captureSkip': DEFAULTS.capture.skip,
      'oplens.captureCalls': DEFAULTS.capture.calls,
      'oplens.captureStop': DEFAULTS.capture.stop,
      'oplens.program': '',
    };
    for (const [key, value] of Object.entries(expected)) {
      assert.ok(props[key], `${key} is contributed`);
      assert.deepEqual(props[key]?.default, value, `${key} default`);
    }
  });

  it('groups the settings in titled sections (the Settings editor shows each as a category), each setting in one', () => {
    const sections = manifest.contributes.configuration;
    assert.ok(Array.isArray(sections), 'contributes.configuration is an array of sections');
    assert.deepEqual(
      sections.map((s) => s.title),
      ['Profiling', 'Profile in Program', 'Display', 'Neuron', 'Server'],
    );
    const keys = sections.flatMap((s) => Object.keys(s.properties));
    assert.equal(new Set(keys).size, keys.length, 'no setting in two sections');
    const sectionOf = (key: string): string | undefined => sections.find((s) => key in s.properties)?.title;
    assert.equal(sectionOf('oplens.backend'), 'Profiling');
    assert.equal(sectionOf('oplens.lenses'), 'Display');
    assert.equal(sectionOf('oplens.neuron.modes'), 'Neuron');
    assert.equal(sectionOf('oplens.explorer.uiPort'), 'Neuron');
    assert.equal(sectionOf('oplens.pythonPath'), 'Server');
    assert.equal(sectionOf('oplens.importStrategy'), 'Server');
  });

  it('types the API no newer than the engine it declares', () => {
    const engine = /(\d+)\.(\d+)/.exec(manifest.engines.vscode);
    const types = /(\d+)\.(\d+)/.exec(manifest.devDependencies['@types/vscode'] ?? '');
    assert.ok(engine && types);
    assert.ok(Number(types[1]) * 1000 + Number(types[2]) <= Number(engine[1]) * 1000 + Number(engine[2]));
  });

  it('packages with vsce into oplens-<version>.vsix without bundling node_modules', () => {
    assert.match(manifest.scripts.package ?? '', /vsce package .*--no-dependencies/);
    assert.equal(manifest.name, 'oplens');
  });

  it('keeps the .vsix to the bundle: .vscodeignore', () => {
    const ignore = repoFile('.vscodeignore');
    assert.match(ignore, /^\*\*$/m, 'everything is excluded first');
    assert.match(ignore, /^!dist\/\*\*$/m, 'then the bundle is allowed back');
    assert.doesNotMatch(ignore, /^!node_modules/m);
  });

  it('has a Get Started walkthrough whose pages ship in the .vsix and whose links run contributed commands', () => {
    const walkthroughs = (manifest.contributes as unknown as { walkthroughs: Walkthrough[] }).walkthroughs;
    assert.equal(walkthroughs.length, 1);
    const steps = walkthroughs[0].steps;
    assert.deepEqual(steps.map((s) => s.id), ['interpreter', 'setup', 'profile', 'results']);
    const ours = new Set(manifest.contributes.commands.map((c) => c.command));
    const theirs = new Set<string>(); // none of another extension's: the Python extension may be missing
    const ignore = repoFile('.vscodeignore');
    assert.match(ignore, /^!extension\/walkthrough\/\*\*$/m);
    assert.match(ignore, /^!examples\/rmsnorm\.py$/m); // what Open the Example copies
    for (const step of steps) {
      assert.ok(repoFile(...step.media.markdown.split('/')).startsWith('# '), step.media.markdown);
      const links = [...step.description.matchAll(/\(command:([\w.]+)/g)].map((m) => m[1]);
      assert.ok(links.length > 0, `${step.id} has a button`);
      for (const command of links) {
        assert.ok(ours.has(command) || theirs.has(command), `${step.id}: ${command}`);
      }
      for (const event of step.completionEvents) {
        const command = event.startsWith('onCommand:') ? event.slice('onCommand:'.length) : undefined;
        assert.ok(!command || ours.has(command) || theirs.has(command), `${step.id}: ${event}`);
      }
    }
  });
});

interface Walkthrough {
  steps: { id: string; description: string; media: { markdown: string }; completionEvents: string[] }[];
}
