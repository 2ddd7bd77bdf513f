import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULTS, initializationOptions } from '../src/settings/settings';
import { jsonFixture, manifestSettings, REPO, repoFile, shippedSources, type ManifestConfiguration } from '../test/fixtures';
import * as names from './names';

/** names.json: what make_fixtures.py writes from oplens.records.names and the backend registry. */
interface PythonNames {
  names: Record<string, unknown>;
  backends: string[];
  backendCommands: { backend: string; name: string; lspCommand: string; settingsKey: string }[];
}

interface Manifest {
  activationEvents: string[];
  contributes: {
    commands: { command: string }[];
    menus: Record<string, { command?: string; submenu?: string }[]>;
    submenus?: { id: string; label: string }[];
    keybindings: { command: string }[];
    configuration: ManifestConfiguration<{ enum?: string[] }>;
  };
}

const python = jsonFixture<PythonNames>('names.json');
const manifest = JSON.parse(repoFile('package.json')) as Manifest;
const exported = names as unknown as Record<string, unknown>;

describe('extension/shared/names.ts agrees with the Python side (names.json)', () => {
  for (const [key, value] of Object.entries(python.names)) {
    it(`${key} = ${JSON.stringify(value)}`, () => {
      assert.ok(key in exported, `names.ts lacks ${key} (oplens.records.names has it)`);
      assert.deepEqual(exported[key], value);
    });
  }

  it('the backends, in the registry order', () => {
    assert.deepEqual([...names.BACKENDS], python.backends);
  });

  it("every backend's commands", () => {
    assert.deepEqual(
      names.BACKEND_COMMANDS.map((c) => ({ ...c })),
      python.backendCommands,
    );
  });

  it("each backend command's settings travel in the initialization options under its key", () => {
    const options = initializationOptions(DEFAULTS);
    for (const c of names.BACKEND_COMMANDS) {
      assert.ok(c.settingsKey in options, `initializationOptions lacks "${c.settingsKey}" (${c.lspCommand})`);
    }
  });
});

describe('extension/shared/names.ts agrees with package.json', () => {
  it('the backend setting offers the backends', () => {
    assert.deepEqual(manifestSettings(manifest.contributes.configuration)[`${names.SETTINGS_SECTION}.backend`]?.enum, [...names.BACKENDS]);
  });

  it('contributes exactly the extension commands', () => {
    assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), Object.values(names.EXTENSION_COMMANDS).sort());
  });

  it('menus and key bindings name contributed commands (and submenus) only', () => {
    const ours: string[] = Object.values(names.EXTENSION_COMMANDS);
    const submenus = (manifest.contributes.submenus ?? []).map((s) => s.id);
    const used: { command?: string; submenu?: string }[] = [...Object.values(manifest.contributes.menus).flat(), ...manifest.contributes.keybindings];
    for (const m of used) {
      assert.ok(m.command !== undefined ? ours.includes(m.command) : submenus.includes(m.submenu ?? ''), JSON.stringify(m));
    }
  });

  it('contributes none of the server’s commands (vscode-languageclient registers those)', () => {
    for (const c of manifest.contributes.commands) {
      assert.ok(!names.SERVER_COMMANDS.includes(c.command), `${c.command} collides with a server command`);
    }
    assert.ok(!names.SERVER_COMMANDS.includes(names.STATUS_MENU_COMMAND));
  });

  it('activates on the results panel (restored after a reload)', () => {
    assert.ok(manifest.activationEvents.includes(`onWebviewPanel:${names.RESULTS_VIEW_TYPE}`));
  });
});

describe('no shared name is written outside names.ts', () => {
  const shared = [
    ...Object.values(python.names).filter((v): v is string => typeof v === 'string'),
    ...python.backendCommands.map((c) => c.lspCommand),
    ...Object.values(names.EXTENSION_COMMANDS),
    names.STATUS_MENU_COMMAND,
    names.RESULTS_VIEW_TYPE,
    names.TRACE_VIEW_TYPE,
  ];
  const files = shippedSources('src', 'shared', 'webview').filter((p) => !p.endsWith(path.join('shared', 'names.ts')));

  it('as a string literal or a pattern, in extension/{src,shared,webview}', () => {
    const found: string[] = [];
    for (const file of files) {
      const text = fs.readFileSync(file, 'utf8');
      for (const name of shared) {
        const forms = [`'${name}'`, `"${name}"`, `\`${name}\``, name.replace(/\./g, '\\.')].filter((f) => f !== name);
        for (const form of forms) {
          // a backquoted name in a comment is prose, not code
          const code = text
            .split('\n')
            .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
            .join('\n');
          if (code.includes(form)) {
            found.push(`${path.relative(REPO, file)}: ${form}`);
          }
        }
      }
    }
    assert.deepEqual(found, [], 'import these from extension/shared/names.ts');
  });
});
