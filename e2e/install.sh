#!/usr/bin/env bash
# Set up the real-VS-Code end-to-end test (e2e/run.mjs) on a Debian 12 machine:
#   1. Debian packages: the headers code-server's native modules build against, the build tools,
#      Chromium (driven headless by playwright-core) and ripgrep.
#   2. The ripgrep download cache that @vscode/ripgrep's postinstall looks in before it tries GitHub
#      (which this network cannot reach), made from Debian's rg binary.
#   3. `npm ci` in e2e/: code-server and playwright-core, pinned by e2e/package-lock.json.
# Idempotent and non-interactive: each step is skipped when its result is already there, so a second
# run takes a second or two; on a fresh machine it does everything.
#
# Environment: OPLENS_E2E_FORCE=1 reinstalls node_modules even when the stamp says they are current.
set -euo pipefail

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$E2E_DIR"

log() { printf '[e2e/install] %s\n' "$*"; }
die() { printf '[e2e/install] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- node
command -v node >/dev/null || die "node is not installed (code-server 4.100.x needs Node 20)"
command -v npm >/dev/null || die "npm is not installed"
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
[ "$NODE_MAJOR" = 20 ] || die "code-server 4.100.x needs Node 20, found $(node --version)"

# ---------------------------------------------------------------- Debian packages
APT_PACKAGES=(
  # code-server's native modules (kerberos, @vscode/spdlog, node-pty, native-keymap, argon2, …)
  build-essential python3 pkg-config libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev
  # the browser and the search binary
  chromium ripgrep
  # used below and by run.mjs
  tar gzip ca-certificates
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to install: ${missing[*]}"
    SUDO="sudo"
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi
command -v chromium >/dev/null || die "chromium is not on PATH after installing it"
command -v rg >/dev/null || die "rg (ripgrep) is not on PATH after installing it"

# ---------------------------------------------------------------- ripgrep cache
# Versions fixed by code-server 4.100.3's lib/vscode/npm-shrinkwrap.json (@vscode/ripgrep 1.15.11)
# and that package's lib/postinstall.js (VERSION = 'v13.0.0-10'). Change them with code-server.
RG_PKG_VERSION=1.15.11
RG_TAG=v13.0.0-10
case "$(uname -m)" in
  x86_64) RG_TARGET=x86_64-unknown-linux-musl ;;
  aarch64) RG_TARGET=aarch64-unknown-linux-musl ;;
  *) die "unsupported architecture $(uname -m)" ;;
esac
# @vscode/ripgrep uses os.tmpdir(): $TMPDIR, else /tmp. Pin TMPDIR so npm's scripts see the same one.
export TMPDIR="${TMPDIR:-/tmp}"
RG_CACHE_DIR="$TMPDIR/vscode-ripgrep-cache-$RG_PKG_VERSION"
RG_TARBALL="$RG_CACHE_DIR/ripgrep-$RG_TAG-$RG_TARGET.tar.gz"
if [ -s "$RG_TARBALL" ] && tar -tzf "$RG_TARBALL" 2>/dev/null | grep -qx 'rg'; then
  log "ripgrep cache present: $RG_TARBALL"
else
  log "making $RG_TARBALL from $(command -v rg) ($(rg --version 2>/dev/null | sed -n 1p))"
  mkdir -p "$RG_CACHE_DIR"
  staging="$(mktemp -d)"
  install -m 0755 "$(readlink -f "$(command -v rg)")" "$staging/rg"
  tar -czf "$RG_TARBALL.part" -C "$staging" rg
  mv "$RG_TARBALL.part" "$RG_TARBALL"
  rm -rf "$staging"
fi

# ---------------------------------------------------------------- npm ci
# The stamp records the lockfile and Node version that node_modules was installed from; any change
# (or a missing code-server build) reinstalls from scratch.
STAMP="node_modules/.oplens-e2e-stamp"
want_stamp="$(sha256sum package-lock.json | cut -d' ' -f1) node-$(node --version)"
installed_ok() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want_stamp" ] &&
    [ -x node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg ] &&
    [ -d node_modules/code-server/lib/vscode/node_modules/kerberos/build ] &&
    [ -f node_modules/playwright-core/package.json ]
}
if [ "${OPLENS_E2E_FORCE:-0}" != 1 ] && installed_ok; then
  log "node_modules current (code-server $(node -p 'require("./node_modules/code-server/package.json").version'))"
else
  log "npm ci (code-server + playwright-core; builds native modules, takes minutes)"
  # Running as root, code-server's postinstall refuses to run without unsafe-perm; `yes` answers
  # npx prompts in nested installs; the nested `npm install`s in lib/vscode need no dev deps.
  export npm_config_unsafe_perm=true npm_config_yes=true
  export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
  npm_log="$(mktemp)"
  if ! npm ci --no-audit --no-fund >"$npm_log" 2>&1; then
    tail -n 60 "$npm_log" >&2
    die "npm ci failed (full log: $npm_log)"
  fi
  rm -f "$npm_log"
  [ -x node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg ] ||
    die "code-server installed without its ripgrep binary (was the cache $RG_TARBALL used?)"
  echo "$want_stamp" >"$STAMP"
fi

# ---------------------------------------------------------------- smoke check
# code-server writes a default config.yaml into $XDG_CONFIG_HOME on every start: keep it out of $HOME.
smoke_home="$(mktemp -d)"
cs_version="$(XDG_CONFIG_HOME="$smoke_home" XDG_DATA_HOME="$smoke_home" \
  node_modules/.bin/code-server --version 2>/dev/null | grep -E '^[0-9]+\.[0-9]+' || true)"
rm -rf "$smoke_home"
[ -n "$cs_version" ] || die "node_modules/.bin/code-server --version failed"
log "code-server $cs_version"
log "$(chromium --version 2>/dev/null | sed -n 1p)"
log "ready: run \`node e2e/run.mjs\`"
