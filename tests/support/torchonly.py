"""A fresh Python environment that sees torch and what torch requires, and nothing else of this one (no OpLens,
no pygls, no numpy): a `python -m venv` whose .pth line adds a folder of links to those distributions' files.

Used by tests/system/test_bundle.py and by the e2e (`python tests/support/torchonly.py DEST` prints the new environment's python).
"""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def torch_only_site(out: Path) -> Path:
    """`out` filled with links to torch's files and its requirements' (none of them numpy or pygls)."""
    out.mkdir(parents=True, exist_ok=True)
    # (name, extras): a requirement's extras bring their own requirements (PyPI's CUDA torch for 3.12+ requires
    # cuda-toolkit[cublas,cudart,...], whose packages are all behind those extras)
    todo: list[tuple[str, frozenset[str]]] = [("torch", frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    linked: set[str] = set()
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    while todo:
        name, extras = todo.pop()
        name = canonicalize_name(name)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        dist = md.distribution(name)
        if name not in linked:
            linked.add(name)
            site = Path(str(dist.locate_file("")))
            for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
                if not (out / top).exists():
                    (out / top).symlink_to(site / top)
        for r in map(Requirement, dist.requires or []):
            if r.marker is None or any(r.marker.evaluate({"python_version": python, "extra": e}) for e in {"", *extras}):
                todo.append((r.name, frozenset(r.extras)))
    assert "numpy" not in linked and "pygls" not in linked
    return out


def fresh_venv(where: Path, torch_only: Path, pip: bool) -> Path:
    """A new environment that sees torch (and its requirements) only; its python."""
    subprocess.run([sys.executable, "-m", "venv", *([] if pip else ["--without-pip"]), str(where)], check=True, timeout=300)
    (site,) = where.glob("lib/python*/site-packages")
    for own in site.glob("setuptools*"):  # ensurepip's old setuptools (Python < 3.12) would hide torch's newer one
        subprocess.run(["rm", "-rf", str(own)], check=True)
    (site / "torch_only.pth").write_text(f"import site; site.addsitedir({str(torch_only)!r})\n")
    return where / "bin" / "python"


if __name__ == "__main__":
    dest = Path(sys.argv[1])
    print(fresh_venv(dest / "venv", torch_only_site(dest / "torch-only"), pip=False))
