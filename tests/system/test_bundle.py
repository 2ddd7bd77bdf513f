"""The OpLens the editor extension ships (bundled/build.py): its pinned libraries run on every supported
Python; the wheel installs into a fresh environment with no registry and `oplens profile` runs from it;
the packaged .vsix holds the bundle, and a Python with torch but without OpLens, pygls or numpy starts
the server from it (PYTHONPATH=bundled/libs, as the extension starts it) and profiles.

The fresh environments are `python -m venv`s that see torch and what torch requires, and nothing else
of this one: a folder of links to those distributions' files (`torch_only`), added by a .pth line."""

from __future__ import annotations

import email
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from oplens.records.names import PROTOCOL_VERSION
from oplens.worker import parent as bundled  # environment_first and BUNDLED_LIBS_ENV
from support.lsp import start_client
from support.paths import ROOT
from support.torchonly import fresh_venv, torch_only_site

BUNDLED = ROOT / "bundled"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")  # requires-python >= 3.10: every one a user may have
FROM_THE_ENVIRONMENT = {"torch", "numpy", "orjson"}  # compiled: never bundled
PROFILE = ["profile", "examples/rmsnorm.py::rmsnorm_naive", "--args", "make_inputs(2, 64, 256)", "--iters", "3"]


def version() -> str:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found
    return found.group(1)


@pytest.fixture(scope="session")
def bundle() -> Path:
    """bundled/ as `npm run package` builds it (cached by its stamp: a second build does nothing)."""
    proc = subprocess.run([sys.executable, str(BUNDLED / "build.py")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return BUNDLED


@pytest.fixture(scope="session")
def torch_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site folder with torch and what it requires (links into this environment), without numpy."""
    return torch_only_site(tmp_path_factory.mktemp("torch-only"))


def clean_env(venv_python: Path, **extra: str) -> dict[str, str]:
    """A plain shell's environment for that venv: nothing of this one's Python settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OPLENS_", "VIRTUAL_ENV", "STANDIN_"))}
    env.update(PATH=f"{venv_python.parent}{os.pathsep}{env.get('PATH', '')}", PYTHONNOUSERSITE="1", CUDA_VISIBLE_DEVICES="",
               PYTHONUNBUFFERED="1", **extra)  # fmt: skip
    return env


def run(python: Path, *argv: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *argv], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def lacks(python: Path, env: dict[str, str], *modules: str) -> None:
    for m in modules:
        assert run(python, "-c", f"import {m}", env=env).returncode != 0, f"{m} imports in the fresh environment"


# ---- the pins ---------------------------------------------------------------------------------------------


def wheel_metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        return email.message_from_string(z.read(name).decode())


def test_the_bundled_libraries_are_pure_and_run_on_every_supported_python(bundle: Path) -> None:
    wheels = sorted((bundle / "wheels").glob("*.whl"))
    meta = {canonicalize_name(str(m["Name"])): m for m in map(wheel_metadata, wheels)}
    assert all(w.name.endswith("-py3-none-any.whl") for w in wheels), [w.name for w in wheels]
    assert {"oplens", "pygls", "lsprotocol", "cattrs", "attrs", "websockets", "rich"} <= set(meta)
    for name, m in meta.items():
        spec = SpecifierSet(str(m.get("Requires-Python") or ""))
        assert all(spec.contains(p + ".0") for p in PYTHONS), f"{name} {m['Version']} needs Python {spec}"
    # every library any bundled one requires, on any supported Python, is bundled at a version it accepts
    for name, m in meta.items():
        for r in map(Requirement, m.get_all("Requires-Dist") or []):
            need = canonicalize_name(r.name)
            if need in FROM_THE_ENVIRONMENT or not any(
                r.marker is None or r.marker.evaluate({"python_version": p, "extra": ""}) for p in PYTHONS
            ):
                continue
            assert need in meta, f"{name} needs {r}, which is not bundled"
            assert r.specifier.contains(str(meta[need]["Version"]), prereleases=True), f"{name} needs {r}"
    assert meta["oplens"]["Version"] == version()
    assert Marker("python_version < '3.11'").evaluate({"python_version": "3.10"})  # exceptiongroup's case: kept


# ---- the wheel, installed with no registry --------------------------------------------------------------


def test_the_wheel_installs_into_a_fresh_environment_with_no_registry_and_profiles(
    bundle: Path, torch_only: Path, tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", torch_only, pip=True)
    env = clean_env(python)
    lacks(python, env, "oplens", "pygls", "numpy", "orjson")
    # the extension's command (bundle.ts installArgs): pip resolves among the wheels and what the environment has
    proc = run(python, "-m", "pip", "install", "--no-index", "--find-links", str(bundle / "wheels"), f"oplens=={version()}",
               env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    where = run(python, "-c", "import oplens, pygls; print(oplens.__file__)", env=env)
    assert where.returncode == 0 and str(tmp_path / "venv") in where.stdout, where
    out = tmp_path / "runs"
    proc = run(python.parent / "oplens", *PROFILE, "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "rmsnorm_naive" in proc.stdout
    (run_dir,) = [d for d in out.iterdir() if (d / "result.json").is_file()]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["totals"]["self_cpu_us"] > 0 and len(result["lines"]) >= 5


# ---- the .vsix --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def vsix(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """`npm run package` into a temporary file, and the file unpacked: (the .vsix, its extension folder)."""
    tmp = tmp_path_factory.mktemp("vsix")
    out = tmp / f"oplens-{version()}.vsix"
    proc = subprocess.run(["npm", "run", "package", "--", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with zipfile.ZipFile(out) as z:
        z.extractall(tmp / "unpacked")
    yield out, tmp / "unpacked" / "extension"


def test_the_vsix_holds_the_bundled_server_and_its_wheels(vsix: tuple[Path, Path]) -> None:
    path, ext = vsix
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    for need in ("bundled/libs/oplens/__init__.py", "bundled/libs/oplens/lsp/server.py", "bundled/libs/pygls/__init__.py",
                 "bundled/libs/lsprotocol/types.py", "bundled/libs/cattrs/__init__.py", "bundled/libs/attrs/__init__.py",
                 "bundled/libs/websockets/__init__.py", "bundled/libs/rich/__init__.py",
                 f"bundled/wheels/oplens-{version()}-py3-none-any.whl", "dist/extension.js"):  # fmt: skip
        assert f"extension/{need}" in names, need
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/bundled/libs/bin/" in n]
    assert not [n for n in names if n.startswith(("extension/bundled/libs/numpy", "extension/bundled/libs/orjson"))]
    print(f"\n{path.name}: {path.stat().st_size / 1e6:.1f} MB, {len(names)} files")


async def test_a_python_without_oplens_starts_the_bundled_server_and_answers_initialize(
    vsix: tuple[Path, Path], torch_only: Path, tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv", torch_only, pip=False)
    libs = vsix[1] / "bundled" / "libs"
    env = clean_env(python)
    lacks(python, env, "oplens", "pygls", "lsprotocol", "numpy")
    env.update(PYTHONPATH=str(libs), OPLENS_BUNDLED_LIBS=str(libs))  # as the extension starts it (bundle.ts)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "model.py").write_text((ROOT / "examples" / "rmsnorm.py").read_text())
    client = await start_client(workspace, "--no-warm", python=str(python), env=env, hint_threshold=None)
    try:
        result = client.initialized  # type: ignore[attr-defined]
        assert result.server_info is not None and result.server_info.version == f"{version()}+protocol.{PROTOCOL_VERSION}"
        model = workspace / "model.py"
        uri = model.as_uri()
        item = lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=model.read_text())
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=item))
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
        assert lenses, "no ▶ Profile lens from the bundled server"
    finally:
        await client.shutdown_session()


def test_a_python_without_oplens_profiles_with_the_bundled_libraries(
    vsix: tuple[Path, Path], torch_only: Path, tmp_path: Path
) -> None:
    """The server's worker runs with the bundle after the environment's packages (worker/parent.py), numpy-less."""
    python = fresh_venv(tmp_path / "venv", torch_only, pip=False)
    libs = vsix[1] / "bundled" / "libs"
    env = clean_env(python, PYTHONPATH=str(libs), OPLENS_BUNDLED_LIBS=str(libs))
    proc = run(python, "-m", "oplens", *PROFILE, "--out", str(tmp_path / "runs"), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "rmsnorm_naive" in proc.stdout


def test_the_worker_puts_the_bundle_after_the_environments_packages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    libs = str(tmp_path / "bundled" / "libs")
    monkeypatch.setattr(sys, "path", [libs, "/env/site-packages", libs + "/", "/other"])
    monkeypatch.setenv(bundled.BUNDLED_LIBS_ENV, libs)
    bundled.environment_first()
    assert sys.path == ["/env/site-packages", "/other", libs]
    monkeypatch.setattr(sys, "path", ["/env/site-packages"])
    monkeypatch.delenv(bundled.BUNDLED_LIBS_ENV)
    bundled.environment_first()  # not started from the bundle: nothing moves
    assert sys.path == ["/env/site-packages"]
