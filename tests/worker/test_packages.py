"""Real code lives in packages: `oplens profile` (and the language server's profile) imports the target as the
program would, under its dotted name from its import root, one module object (worker/usercode.py).

Every package here is written by the test as projects are laid out (a flat package with relative imports, a
src layout, a namespace package, a module named like its package, a library installed into a temporary
environment's site-packages, editable or not) and profiled through the real CLI or the real language server;
each run's ops sit on the lines that run them, and the lines sum to the totals.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from support.cli import oplens_cli
from support.lsp import open_doc, plain, served_client

FAST = ["--warmup", "1", "--iters", "3"]

# A flat package: relative imports (a sibling and `..`-free subpackage), a module-level registry, and an
# `__init__` that imports the target module (so the package's class is the module's class: one object).
MYPKG = {
    "__init__.py": "from .model import Layer, block\n\nREGISTRY: list[object] = []\n",
    "layers.py": "import torch\n\n\ndef act(x):\n    return torch.relu(x)\n",
    "util/__init__.py": "",
    "util/norm.py": "def norm(x):\n    return x / (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()\n",
    "model.py": textwrap.dedent("""\
        import torch

        import mypkg

        from .layers import act
        from .util.norm import norm


        class Layer:
            def __init__(self, n):
                self.w = torch.randn(n, n)
                mypkg.REGISTRY.append(self)


        def block(x, layer):
            assert isinstance(layer, mypkg.Layer) and len(mypkg.REGISTRY) == 1, (type(layer), mypkg.REGISTRY)
            y = torch.mm(x, layer.w)
            y = act(y)
            return norm(y)
        """),
    "train.py": textwrap.dedent("""\
        import torch

        from .model import Layer, block

        layer = Layer(16)
        for _ in range(12):
            block(torch.randn(8, 16), layer)
        print("trained")
        """),
}
BLOCK_LINES = {"torch.mm(x, layer.w)": {"aten::mm"}, "act(y)": {"aten::relu"}, "norm(y)": {"aten::pow", "aten::mean"}}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def profiled(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run: dict[str, Any] = json.loads(proc.stdout)
    return run


def assert_lines(run: dict[str, Any], file: Path, expected: dict[str, set[str]]) -> None:
    """Each expected line (found by its text) holds at least those ops, and the lines sum to the totals."""
    source = file.read_text().splitlines()
    by_line = {ln["line"]: {o["name"] for o in ln["ops"]} for ln in run["lines"]}
    for text, ops in expected.items():
        line = next(i for i, t in enumerate(source, 1) if text in t)
        assert ops <= by_line.get(line, set()), (text, line, by_line)
    assert sum(ln["self_cpu_us"] for ln in run["lines"]) == pytest.approx(run["totals"]["self_cpu_us"], rel=1e-6)


def test_a_package_module_with_relative_imports_is_its_package_module(tmp_path: Path) -> None:
    write(tmp_path / "mypkg", MYPKG)
    proc = oplens_cli(tmp_path, "profile", "mypkg/model.py::block", "--args", "torch.randn(8, 16), Layer(16)",
                      *FAST, "--json", "-")  # fmt: skip
    run = profiled(proc)
    assert run["target"]["module"] == "mypkg.model"
    assert_lines(run, tmp_path / "mypkg" / "model.py", BLOCK_LINES)
    text = oplens_cli(tmp_path, "profile", "mypkg/model.py::block", "--args", "torch.randn(8, 16), Layer(16)", *FAST)
    assert text.returncode == 0 and "imported as mypkg.model" in text.stdout, text.stdout + text.stderr


def test_a_flat_script_is_imported_by_path_as_before(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "script.py").write_text("import torch\n\n\ndef f(x):\n    return torch.relu(x)\n")
    run = profiled(oplens_cli(tmp_path, "profile", "tools/script.py::f", "--args", "torch.randn(64)", *FAST, "--json", "-"))
    assert run["target"]["module"] == "<script>"
    assert_lines(run, tmp_path / "tools" / "script.py", {"torch.relu": {"aten::relu"}})


def test_a_module_named_like_its_package_imports_its_package(tmp_path: Path) -> None:
    write(tmp_path / "pkg", {
        "__init__.py": "",
        "helpers.py": "def twice(x):\n    return x * 2\n",
        "pkg.py": "import pkg.helpers\nfrom pkg import helpers\n\n\ndef f(x):\n    y = helpers.twice(x)\n    return y + 1\n",
    })  # fmt: skip
    run = profiled(oplens_cli(tmp_path, "profile", "pkg/pkg.py::f", "--args", "torch.randn(64)", *FAST, "--json", "-"))
    assert run["target"]["module"] == "pkg.pkg"
    assert_lines(run, tmp_path / "pkg" / "pkg.py", {"helpers.twice(x)": {"aten::mul"}, "y + 1": {"aten::add"}})


def test_a_namespace_package_module_with_a_relative_import(tmp_path: Path) -> None:
    write(tmp_path / "ns" / "sub", {
        "helper.py": "def triple(x):\n    return x * 3\n",
        "mod.py": "from .helper import triple\n\n\ndef g(x):\n    y = triple(x)\n    return y.sum()\n",
    })  # fmt: skip
    run = profiled(oplens_cli(tmp_path, "profile", "ns/sub/mod.py::g", "--args", "torch.randn(64)", *FAST, "--json", "-"))
    assert run["target"]["module"] == "ns.sub.mod"
    assert_lines(run, tmp_path / "ns" / "sub" / "mod.py", {"triple(x)": {"aten::mul"}, "y.sum()": {"aten::sum"}})


def test_a_file_that_cannot_be_imported_as_part_of_its_package_says_what_to_do(tmp_path: Path) -> None:
    write(tmp_path / "a" / "b", {"__init__.py": "", "m.py": "from ..util import x\n\n\ndef f():\n    return 1\n"})
    proc = oplens_cli(tmp_path, "profile", "a/b/m.py::f", *FAST)
    assert proc.returncode == 2, proc.stderr
    assert "attempted relative import beyond top-level package" in proc.stderr
    assert f"add an __init__.py to {tmp_path / 'a'}" in proc.stderr and "Traceback" not in proc.stderr
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write(outside / "q", {"m.py": "from .z import y\n\n\ndef f():\n    return 1\n"})
    proc = oplens_cli(tmp_path, "profile", str(outside / "q" / "m.py") + "::f", *FAST)
    assert proc.returncode == 2, proc.stderr
    assert "uses a relative import (line 1)" in proc.stderr and "pip install -e ." in proc.stderr


def test_run_takes_dash_m_after_the_separator_as_python_does(tmp_path: Path) -> None:
    write(tmp_path / "mypkg", MYPKG)
    proc = oplens_cli(tmp_path, "run", "--target", "mypkg/model.py::block", "--calls", "3", "--json", "-",
                      "--", "-m", "mypkg.train")  # fmt: skip
    run = profiled(proc)
    assert run["capture"]["program"] == "-m mypkg.train" and "trained" in proc.stderr
    assert_lines(run, tmp_path / "mypkg" / "model.py", BLOCK_LINES)


# A temporary environment: a venv of its own, which sees this one's packages (torch, OpLens) through a .pth, and
# into which the test's library is pip-installed as a user installs one.


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("env")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())  # fmt: skip
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    # site.addsitedir, not a plain path line: this environment's own .pth files (OpLens's editable install) count too
    (site / "oplens-test-parent.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in sorted(ours)))
    return python


def pip_install(python: Path, *argv: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-build-isolation", "--no-index", *argv], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def project(root: Path, name: str, files: dict[str, str], src: bool) -> Path:
    """A setuptools project `name` whose package's files are `files` (under src/ for a src layout)."""
    base = root / "src" if src else root
    write(base / name, files)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name}"
        version = "0.1"

        [tool.setuptools.packages.find]
        where = ["{"src" if src else "."}"]
        """)
    )
    return root


# A library as libraries are written: an __init__ that re-exports, a subpackage importing `..util`.
TINYLIB = {
    "__init__.py": "from .models.mlp import MLP, gated\n\n__all__ = ['MLP', 'gated']\n",
    "util.py": "import torch\n\n\ndef silu(x):\n    return torch.nn.functional.silu(x)\n",
    "models/__init__.py": "",
    "models/mlp.py": textwrap.dedent("""\
        import torch
        from torch import nn

        from ..util import silu


        class MLP(nn.Module):
            def __init__(self, dim=32, hidden=64):
                super().__init__()
                self.up = nn.Linear(dim, hidden, bias=False)
                self.gate = nn.Linear(dim, hidden, bias=False)
                self.down = nn.Linear(hidden, dim, bias=False)

            def forward(self, x):
                h = silu(self.gate(x)) * self.up(x)
                return self.down(h)


        def gated(x, mlp):
            return mlp(x) + x
        """),
}
MLP_LINES = {"silu(self.gate(x))": {"aten::silu", "aten::mul", "aten::mm"}, "self.down(h)": {"aten::mm"}}


def test_an_installed_library_profiled_in_its_site_packages_file(tmp_path: Path, env: Path) -> None:
    pip_install(env, str(project(tmp_path / "tinylib-src", "tinylib", TINYLIB, src=False)))
    installed = Path(subprocess.check_output([str(env), "-c", "import tinylib.models.mlp as m; print(m.__file__)"],
                                             text=True).strip())  # fmt: skip
    assert "site-packages" in installed.parts and installed.is_relative_to(env.parents[1])
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run([str(env), "-m", "oplens", "profile", f"{installed}::MLP.forward",
                           "--args", "MLP(), torch.randn(4, 32)", *FAST, "--json", "-"],
                          cwd=ws, capture_output=True, text=True, timeout=300)  # fmt: skip
    run = profiled(proc)
    assert run["target"]["module"] == "tinylib.models.mlp" and run["target"]["file"] == str(installed)
    assert_lines(run, installed, MLP_LINES)


def test_a_src_layout_installed_editable(tmp_path: Path, env: Path) -> None:
    root = project(tmp_path / "srcproj", "srclib", {**TINYLIB}, src=True)
    pip_install(env, "-e", str(root))
    file = root / "src" / "srclib" / "models" / "mlp.py"
    proc = subprocess.run([str(env), "-m", "oplens", "profile", "src/srclib/models/mlp.py::MLP.forward",
                           "--args", "srclib.MLP(), torch.randn(4, 32)", *FAST, "--json", "-"],
                          cwd=root, capture_output=True, text=True, timeout=300)  # fmt: skip
    run = profiled(proc)
    assert run["target"]["module"] == "srclib.models.mlp"
    assert_lines(run, file, MLP_LINES)


async def test_the_language_server_profiles_a_package_module(tmp_path: Path) -> None:
    write(tmp_path / "mypkg", MYPKG)
    async with served_client(tmp_path) as client:
        uri = open_doc(client, tmp_path / "mypkg" / "model.py")
        reply = plain(await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="oplens.profile",
            arguments=[{"uri": uri, "qualname": "block", "args": "torch.randn(8, 16), Layer(16)", "warmup": 1, "iters": 3}],
        )))  # fmt: skip
    run = json.loads((tmp_path / ".oplens" / "runs" / reply["run_id"] / "result.json").read_text())
    assert run["target"]["module"] == "mypkg.model"
    assert_lines(run, tmp_path / "mypkg" / "model.py", BLOCK_LINES)


def test_compare_and_a_line_target_in_a_package_module(tmp_path: Path) -> None:
    write(tmp_path / "mypkg", MYPKG)
    write(
        tmp_path / "mypkg",
        {"variants.py": "from .layers import act\n\n\ndef a(x):\n    return act(x)\n\n\ndef b(x):\n    return x.clamp_min(0)\n"},
    )
    proc = oplens_cli(tmp_path, "compare", "mypkg/variants.py::a", "mypkg/variants.py::b", "--args", "torch.randn(64)",
                      *FAST, "--json", "-")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [r["target"]["module"] for r in json.loads(proc.stdout)["runs"]] == ["mypkg.variants"] * 2
    line = next(i for i, t in enumerate((tmp_path / "mypkg" / "model.py").read_text().splitlines(), 1) if "act(y)" in t)
    run = profiled(oplens_cli(tmp_path, "profile", f"mypkg/model.py:{line}", "--args", "torch.randn(8, 16), Layer(16)",
                              *FAST, "--json", "-"))  # fmt: skip
    assert run["target"]["qualname"] == "block" and run["target"]["module"] == "mypkg.model"


# The same through the real language server (the editor's request, `oplens.profile` and `oplens.compare`). The editor
# starts the server from the workspace's interpreter: for an editable install or an installed library, the temporary
# environment's, whose packages the profile's worker (the server's own interpreter) imports.


@asynccontextmanager
async def served_from(python: Path, workspace: Path) -> AsyncIterator[LanguageClient]:
    """`served_client` with `oplens serve` started from `python`."""
    async with served_client(workspace, python=str(python)) as client:
        yield client


async def served_profile(client: LanguageClient, workspace: Path, file: Path, qualname: str, args: str) -> dict[str, Any]:
    """The editor's Profile Function on `qualname` of `file` (opened as the editor opens it): the stored run."""
    uri = open_doc(client, file)
    reply = plain(await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="oplens.profile", arguments=[{"uri": uri, "qualname": qualname, "args": args, "warmup": 1, "iters": 3}],
    )))  # fmt: skip
    run: dict[str, Any] = json.loads((workspace / ".oplens" / "runs" / reply["run_id"] / "result.json").read_text())
    return run


async def test_the_language_server_profiles_a_src_layout_installed_editable(tmp_path: Path, env: Path) -> None:
    root = project(tmp_path / "srcproj", "lspsrclib", TINYLIB, src=True)
    pip_install(env, "-e", str(root))
    file = root / "src" / "lspsrclib" / "models" / "mlp.py"
    async with served_from(env, root) as client:
        run = await served_profile(client, root, file, "MLP.forward", "lspsrclib.MLP(), torch.randn(4, 32)")
    assert run["target"]["module"] == "lspsrclib.models.mlp"
    assert_lines(run, file, MLP_LINES)


async def test_the_language_server_profiles_a_namespace_package_module(tmp_path: Path) -> None:
    write(tmp_path / "ns" / "sub", {
        "helper.py": "def triple(x):\n    return x * 3\n",
        "mod.py": "from .helper import triple\n\n\ndef g(x):\n    y = triple(x)\n    return y.sum()\n",
    })  # fmt: skip
    async with served_client(tmp_path) as client:
        run = await served_profile(client, tmp_path, tmp_path / "ns" / "sub" / "mod.py", "g", "torch.randn(64)")
    assert run["target"]["module"] == "ns.sub.mod"
    assert_lines(run, tmp_path / "ns" / "sub" / "mod.py", {"triple(x)": {"aten::mul"}, "y.sum()": {"aten::sum"}})


async def test_the_language_server_profiles_an_installed_library_in_its_site_packages_file(tmp_path: Path, env: Path) -> None:
    pip_install(env, str(project(tmp_path / "lib-src", "lsptinylib", TINYLIB, src=False)))
    installed = Path(subprocess.check_output([str(env), "-c", "import lsptinylib.models.mlp as m; print(m.__file__)"],
                                             text=True).strip())  # fmt: skip
    # The environment is outside the workspace ("Go to Definition" opens the library's file in its site-packages):
    # the server, run from that environment's interpreter, profiles a file under one of its import roots.
    ws = tmp_path / "ws"
    ws.mkdir()
    assert "site-packages" in installed.parts and not installed.is_relative_to(ws)
    async with served_from(env, ws) as client:
        run = await served_profile(client, ws, installed, "MLP.forward", "MLP(), torch.randn(4, 32)")
    assert run["target"]["module"] == "lsptinylib.models.mlp" and run["target"]["file"] == str(installed)
    assert_lines(run, installed, MLP_LINES)


async def test_the_language_server_compares_two_functions_of_a_package_module(tmp_path: Path) -> None:
    write(tmp_path / "mypkg", MYPKG)
    write(tmp_path / "mypkg", {"variants.py": "from .layers import act\n\n\ndef a(x):\n    return act(x)\n\n\n"
                                              "def b(x):\n    return x.clamp_min(0)\n"})  # fmt: skip
    file = tmp_path / "mypkg" / "variants.py"
    async with served_client(tmp_path) as client:
        uri = open_doc(client, file)
        reply = plain(await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="oplens.compare",
            arguments=[{"targets": [{"uri": uri, "qualname": q} for q in ("a", "b")], "args": "torch.randn(64)",
                        "warmup": 1, "iters": 3}],
        )))  # fmt: skip
    assert [r["variant"] for r in reply["summary"]] == ["a", "b"]
    runs = [json.loads((tmp_path / ".oplens" / "runs" / r["run_id"] / "result.json").read_text()) for r in reply["summary"]]
    assert [r["target"]["module"] for r in runs] == ["mypkg.variants"] * 2
    assert_lines(runs[0], file, {"return act(x)": {"aten::relu"}})
    assert_lines(runs[1], file, {"x.clamp_min(0)": {"aten::clamp_min"}})
