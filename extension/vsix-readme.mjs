#!/usr/bin/env node
// The README the .vsix carries, which VS Code shows on the extension's page: extension/README.md with each
// picture (a relative image, ../docs/images/*.png|gif) inlined as a data: URI, and each relative link to a
// file of the repository written as its text and path. VS Code draws that page in a webview whose
// Content-Security-Policy allows only https: and data: images, and whose sanitizer drops any other image
// source, so a picture referenced relatively never shows from an installed .vsix; and OpLens has no public
// address to serve them from (package.json names no repository, so vsce has no base URL to rewrite them to).
// Written to out/vsix/README.md, which `npm run package` gives vsce (--readme-path, with
// --no-rewrite-relative-links: there is nothing relative left for it to rewrite).
//
//   node extension/vsix-readme.mjs [OUT]   # OUT: another file to write (the tests')
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = path.join(ROOT, 'extension', 'README.md');
const OUT = path.resolve(process.argv[2] ?? path.join(ROOT, 'out', 'vsix', 'README.md'));
const MIME = { '.png': 'image/png', '.gif': 'image/gif', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg' };

const relative = (link) => !/^[a-z][a-z0-9+.-]*:/i.test(link) && !link.startsWith('#');
const inRepo = (link) => path.resolve(path.dirname(SOURCE), decodeURI(link.split('#')[0]));

let pictures = 0;
let bytes = 0;
function inline(alt, link) {
  if (!relative(link)) return `![${alt}](${link})`;
  const file = inRepo(link);
  const mime = MIME[path.extname(file).toLowerCase()];
  if (!mime) throw new Error(`${SOURCE}: the picture ${link} is not a PNG, GIF or JPEG (VS Code's page shows no SVG)`);
  if (!fs.existsSync(file)) throw new Error(`${SOURCE}: the picture ${link} is not in the repository (${file})`);
  const data = fs.readFileSync(file);
  pictures += 1;
  bytes += data.length;
  return `![${alt}](data:${mime};base64,${data.toString('base64')})`;
}

function unlink(text, link) {
  if (!relative(link)) return `[${text}](${link})`;
  const file = path.relative(ROOT, inRepo(link)).split(path.sep).join('/');
  return text.replace(/`/g, '') === file ? `\`${file}\`` : `${text} (\`${file}\` in OpLens's repository)`;
}

// Markdown outside fenced code blocks: images first (their syntax contains a link's), then links.
let fenced = false;
const lines = fs.readFileSync(SOURCE, 'utf8').split('\n').map((line) => {
  if (/^\s*```/.test(line)) fenced = !fenced;
  if (fenced || /^\s*```/.test(line)) return line;
  return line
    .replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (_, alt, link) => inline(alt, link))
    .replace(/(^|[^!])\[([^\]]+)\]\(([^)\s]+)\)/g, (_, before, text, link) => before + unlink(text, link));
});

fs.mkdirSync(path.dirname(OUT), { recursive: true });
fs.writeFileSync(OUT, lines.join('\n'));
console.log(`${path.relative(ROOT, OUT)}: extension/README.md with ${pictures} pictures inlined (${Math.round(bytes / 1024)} KiB)`);
