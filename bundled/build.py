"""Build what the editor extension ships of OpLens: `bundled/wheels/` and `bundled/libs/`.

- `bundled/wheels/`: OpLens's own wheel (`pip wheel --no-deps .`) and a py3-none-any wheel of each
  pure-Python library pinned in `bundled/requirements.txt` (`pip download`, for Python 3.10, so only
  wheels that run on every supported Python are taken). The extension installs OpLens into the user's
  environment from these, with no registry (`pip install --no-index --find-links bundled/wheels oplens`).
- `bundled/libs/`: the same wheels installed (`pip install --target`, no scripts, no bytecode): the
  extension starts the language server with the user's interpreter and this folder first on PYTHONPATH.

Run by `npm run package` (`vscode:prepublish`, so `make package`/`make vsix` too). Cached: a stamp holds a
digest of the pins, pyproject.toml, OpLens's sources and this file; while it matches, nothing is done
(the first build downloads the pinned wheels once; later ones reuse what is in bundled/wheels/).

    python bundled/build.py [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bundled"
PINS = HERE / "requirements.txt"
WHEELS = HERE / "wheels"
LIBS = HERE / "libs"
STAMP = HERE / ".stamp"
OLDEST_PYTHON = "3.10"  # pyproject.toml's requires-python: the pinned wheels must run on it


def pins() -> dict[str, str]:
    """Name → version of each pinned library (`name==version` lines; `#` starts a comment)."""
    found: dict[str, str] = {}
    for line in PINS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            if not version:
                raise SystemExit(f"{PINS}: {line!r} is not pinned (name==version)")
            found[name.strip()] = version.strip()
    return found


def wheel_name(name: str) -> str:
    """A distribution's name as wheel file names spell it (PEP 427: runs of -_. become _, lower case)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def digest() -> str:
    """What the bundle is made of: the pins, the project's metadata, OpLens's sources, this script."""
    h = hashlib.sha256()
    sources = sorted(p for p in (ROOT / "server" / "oplens").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for p in [PINS, ROOT / "pyproject.toml", Path(__file__).resolve(), *sources]:
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("bundle:", " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def download_pins(wanted: dict[str, str]) -> list[Path]:
    """The pinned wheels in bundled/wheels/, downloaded where missing; other versions' wheels removed."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    keep: list[Path] = []
    for name, version in wanted.items():
        prefix = f"{wheel_name(name)}-{version}-"
        have = [p for p in WHEELS.glob("*.whl") if p.name.lower().startswith(prefix)]
        if not have:
            pip("download", "--quiet", "--no-deps", "--only-binary=:all:", "--python-version", OLDEST_PYTHON,
                "--implementation", "py", "--abi", "none", "--platform", "any", "--dest", str(WHEELS),
                f"{name}=={version}")  # fmt: skip
            have = [p for p in WHEELS.glob("*.whl") if p.name.lower().startswith(prefix)]
        if len(have) != 1 or not have[0].name.endswith(("-py3-none-any.whl", "-py2.py3-none-any.whl")):
            raise SystemExit(f"bundle: {name}=={version} gave {[p.name for p in have]}, not one pure-Python wheel")
        keep.append(have[0])
    for stale in set(WHEELS.glob("*.whl")) - set(keep):
        if not stale.name.startswith("oplens-"):
            stale.unlink()
    return keep


def build_oplens() -> Path:
    """OpLens's wheel from this checkout, in bundled/wheels/ (replacing the one there)."""
    with tempfile.TemporaryDirectory() as tmp:
        pip("wheel", "--quiet", "--no-deps", "--wheel-dir", tmp, str(ROOT))
        (built,) = Path(tmp).glob("oplens-*.whl")
        for old in WHEELS.glob("oplens-*.whl"):
            old.unlink()
        return Path(shutil.move(str(built), WHEELS / built.name))


def install_libs(wheels: list[Path]) -> None:
    """The wheels installed into bundled/libs/ (a fresh folder): packages and their metadata only."""
    shutil.rmtree(LIBS, ignore_errors=True)
    pip("install", "--quiet", "--no-deps", "--no-index", "--no-compile", "--target", str(LIBS), *map(str, wheels))
    shutil.rmtree(LIBS / "bin", ignore_errors=True)  # console scripts, with this build's interpreter in their #!
    for cache in LIBS.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build again even where the stamp says it is current")
    args = parser.parse_args(argv)
    key = digest()
    if not args.force and STAMP.is_file() and STAMP.read_text().strip() == key and (LIBS / "oplens").is_dir():
        print(f"bundle: current ({LIBS.relative_to(ROOT)}, {WHEELS.relative_to(ROOT)})")
        return 0
    STAMP.unlink(missing_ok=True)
    wheels = [*download_pins(pins()), build_oplens()]
    install_libs(wheels)
    STAMP.write_text(key + "\n")
    print(f"bundle: {len(wheels)} wheels ({size(WHEELS) / 1e6:.1f} MB) in {WHEELS.relative_to(ROOT)}, "
          f"installed in {LIBS.relative_to(ROOT)} ({size(LIBS) / 1e6:.1f} MB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
