// Bundles the extension: dist/extension.js (Node, the extension host) and the webviews'
// browser bundles dist/webview/{results,trace}.{js,css}. Everything the .vsix needs is in dist/;
// `vsce package --no-dependencies` ships no node_modules.
//
//   node esbuild.mjs               development build (source maps)
//   node esbuild.mjs --production  minified, no source maps (what `vsce package` runs)
//   node esbuild.mjs --watch       rebuild on change
import * as esbuild from 'esbuild';
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const require = createRequire(import.meta.url);

/** @type {import('esbuild').BuildOptions} */
const common = {
  bundle: true,
  minify: production,
  sourcemap: production ? false : 'linked',
  logLevel: 'info',
  legalComments: production ? 'none' : 'inline',
};

/** @type {import('esbuild').BuildOptions} */
const extension = {
  ...common,
  entryPoints: ['extension/src/extension.ts'],
  outfile: 'dist/extension.js',
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  // `vscode` is provided by the host; ws's optional native speed-ups are not shipped (ws falls back)
  external: ['vscode', 'bufferutil', 'utf-8-validate'],
  tsconfig: 'tsconfig.json',
};

/** @type {import('esbuild').BuildOptions} */
const webviews = {
  ...common,
  entryPoints: {
    results: 'extension/webview/results.ts',
    trace: 'extension/webview/trace.ts',
    flame: 'extension/webview/flame.ts',
  },
  outdir: 'dist/webview',
  platform: 'browser',
  format: 'iife',
  target: 'es2022',
  tsconfig: 'extension/webview/tsconfig.json',
  loader: { '.css': 'css' },
};

async function copyAssets() {
  // vscode-languageclient kills a server's process tree with this script, found beside its code
  const root = dirname(require.resolve('vscode-languageclient/package.json'));
  await mkdir('dist', { recursive: true });
  await copyFile(join(root, 'lib', 'node', 'terminateProcess.sh'), 'dist/terminateProcess.sh');
  await copySpeedscope();
}

// The flame graph (extension/src/flamegraph): speedscope's own release build, unmodified, under names without its
// build's hashes, with its font (its stylesheet names it beside itself) and its licence.
async function copySpeedscope() {
  const root = dirname(require.resolve('speedscope/package.json'));
  const release = join(root, 'dist', 'release');
  await mkdir('dist/speedscope', { recursive: true });
  for (const name of await readdir(release)) {
    if (/^speedscope-.*\.js$/.test(name)) {
      await copyFile(join(release, name), 'dist/speedscope/speedscope.js');
    } else if (/^speedscope-.*\.css$/.test(name)) {
      await copyFile(join(release, name), 'dist/speedscope/speedscope.css');
    } else if (name.endsWith('.woff2') || name === 'source-code-pro.LICENSE.md') {
      await copyFile(join(release, name), join('dist/speedscope', name));
    }
  }
  await copyFile(join(root, 'LICENSE'), 'dist/speedscope/LICENSE');
}

await rm('dist', { recursive: true, force: true });
if (watch) {
  const contexts = await Promise.all([esbuild.context(extension), esbuild.context(webviews)]);
  await copyAssets();
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  await Promise.all([esbuild.build(extension), esbuild.build(webviews)]);
  await copyAssets();
}
