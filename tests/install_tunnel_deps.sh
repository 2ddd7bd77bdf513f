#!/usr/bin/env bash
# Install what the SSH-tunnel tests (tests/system/test_tunnel.py, tests/support/sshtunnel.py) need on a Debian 12 machine:
# the real OpenSSH server and client (Debian's openssh-server, which brings openssh-client), and Chromium
# (the Neuron Explorer page loaded through the tunnel; e2e/install.sh installs it too, but after pytest).
# The tests start their own sshd (`sshd -D -e -f <their config>` on a free loopback port, keys and config in a
# temporary folder): nothing here configures or starts a system sshd, and one the package's postinstall may
# have started is stopped again (in a container without systemd, invoke-rc.d starts none).
# Idempotent and non-interactive: nothing to do (a dpkg-query) when the package is installed.
set -euo pipefail

log() { printf '[tests/install_tunnel_deps] %s\n' "$*"; }
die() { printf '[tests/install_tunnel_deps] ERROR: %s\n' "$*" >&2; exit 1; }

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }

if installed openssh-server && installed chromium && [ -x /usr/sbin/sshd ] && command -v ssh >/dev/null \
    && command -v ssh-keygen >/dev/null; then
  log "openssh-server and chromium present"
  exit 0
fi
command -v apt-get >/dev/null || die "no apt-get: install the OpenSSH server (sshd) and client (ssh, ssh-keygen) yourself"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "need root or sudo to install openssh-server"
  SUDO="sudo"
fi
# A system sshd running before the install is the machine's own: leave it alone. One that appears with the
# install was started by the package's postinstall: stop it (the tests start their own).
before="$(pgrep -x sshd || true)"
export DEBIAN_FRONTEND=noninteractive
log "apt-get install openssh-server chromium"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends openssh-server chromium >/dev/null
for pid in $(pgrep -x sshd || true); do
  case " $(echo $before) " in
    *" $pid "*) ;;
    *)
      log "stopping the sshd (pid $pid) the package's postinstall started"
      if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
        $SUDO systemctl stop ssh.service ssh.socket 2>/dev/null || true
      fi
      $SUDO kill "$pid" 2>/dev/null || true
      ;;
  esac
done
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is missing after installing openssh-server"
command -v ssh >/dev/null || die "ssh is not on PATH after installing openssh-server"
log "openssh-server installed ($(/usr/sbin/sshd -V 2>&1 | head -n 1 || true))"
