"""The parent side of `oplens run` without running anything: the program checked, a torchrun
command split into its options and the program, the rendezvous a single node gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from oplens.engine.program import ProgramRequest, is_torchrun, launcher, split_torchrun, validate
from oplens.records.errors import OpLensError
from oplens.records.job import ProgramSpec, TargetSpec


def test_torchrun_options_and_the_script_are_told_apart() -> None:
    options, program = split_torchrun(["--nproc-per-node", "2", "--rdzv_backend=c10d", "--standalone", "train.py", "--lr", "3"])
    assert options == ["--nproc-per-node", "2", "--rdzv_backend=c10d", "--standalone"]
    assert program == ProgramSpec(program="train.py", args=["--lr", "3"])


def test_torchrun_with_a_module() -> None:
    options, program = split_torchrun(["--nnodes", "2", "-m", "pkg.train", "--steps", "5"])
    assert options == ["--nnodes", "2"] and program == ProgramSpec(module="pkg.train", args=["--steps", "5"])


def test_torchrun_without_a_program_or_with_no_python_is_bad_input() -> None:
    with pytest.raises(OpLensError, match="names no program"):
        split_torchrun(["--nproc-per-node", "2"])
    with pytest.raises(OpLensError, match="not supported"):
        split_torchrun(["--no-python", "./run.sh"])


def test_a_program_that_is_torchrun_is_recognised() -> None:
    assert is_torchrun(ProgramSpec(module="torch.distributed.run", args=["train.py"]))
    assert is_torchrun(ProgramSpec(program="/usr/bin/torchrun", args=["train.py"]))
    assert not is_torchrun(ProgramSpec(program="train.py"))


def test_a_single_node_gets_a_rendezvous_of_its_own_and_several_keep_theirs() -> None:
    assert launcher(["--nproc-per-node", "2"]) == ["--nproc-per-node", "2", "--standalone"]
    assert launcher(["--nproc_per_node=2", "--master-port", "29512"]) == ["--nproc_per_node=2", "--master-port", "29512"]
    two = ["--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "127.0.0.1:29400"]
    assert launcher(two) == two
    assert launcher(None) is None


def test_validate_unwraps_a_torchrun_launch_configuration(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('hi')\n")
    torchrun = ProgramSpec(module="torch.distributed.run", args=["--nproc-per-node", "2", "train.py", "-x"])
    req = ProgramRequest(targets=[TargetSpec("train.py", qualname="main")], workspace=tmp_path, program=torchrun)
    program = validate(req)
    assert req.launcher == ["--nproc-per-node", "2"]
    assert program.program == str(tmp_path / "train.py") and program.args == ["-x"] and program.cwd == str(tmp_path)


def test_validate_names_what_is_wrong(tmp_path: Path) -> None:
    def check(program: ProgramSpec, **kw: object) -> str:
        req = ProgramRequest(targets=[TargetSpec("a.py", qualname="f")], workspace=tmp_path, program=program, **kw)  # type: ignore[arg-type]
        with pytest.raises(OpLensError) as e:
            validate(req)
        return e.value.message

    assert "does not exist" in check(ProgramSpec(program="nope.py"))
    assert "not a module name" in check(ProgramSpec(module="pkg/mod"))
    assert "working directory" in check(ProgramSpec(program="a.py", cwd="missing"))
    assert "--calls must be 1 or more" in check(ProgramSpec(module="m"), calls=0)
    with pytest.raises(OpLensError, match="exactly one"):
        ProgramSpec(program="a.py", module="m")
