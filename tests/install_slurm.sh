#!/usr/bin/env bash
# Install what the Slurm tests (tests/system/test_slurm.py, tests/support/slurmlab.py) need on a Debian 12 machine: Debian's Slurm
# 22.05 (slurmctld, slurmd, the client commands srun/sbatch/squeue/scancel/scontrol) and munge. The tests start their
# own slurmctld and two slurmd (two emulated nodes on loopback, `auth/none`, configuration and state in a temporary
# folder) and stop them by PID: nothing here configures or starts a system Slurm, and daemons the packages'
# postinstall may have started are stopped again (in a container without systemd, invoke-rc.d starts none).
# Idempotent and non-interactive: nothing to do (a dpkg-query) when the packages are installed.
set -euo pipefail

log() { printf '[tests/install_slurm] %s\n' "$*"; }
die() { printf '[tests/install_slurm] ERROR: %s\n' "$*" >&2; exit 1; }

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }

PACKAGES="slurmctld slurmd slurm-client munge"
missing=""
for p in $PACKAGES; do installed "$p" || missing="$missing $p"; done
if [ -z "$missing" ]; then
  log "$PACKAGES present"
  exit 0
fi
command -v apt-get >/dev/null || die "no apt-get: install Slurm ($PACKAGES) yourself, or the Slurm tests are skipped"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "need root or sudo to install$missing"
  SUDO="sudo"
fi
daemons() { for d in slurmctld slurmd munged; do pgrep -x "$d" || true; done; }
before="$(daemons)"
export DEBIAN_FRONTEND=noninteractive
log "apt-get install$missing"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
for pid in $(daemons); do
  case " $(echo $before) " in
    *" $pid "*) ;;
    *) log "stopping pid $pid, started by a package's postinstall (the tests start their own)"; $SUDO kill "$pid" || true ;;
  esac
done
log "installed$missing"
