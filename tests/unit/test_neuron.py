"""The Neuron backend in the test process, against the STAND-IN torch_neuronx (tests/standins/): NeuronConfig
from the options, the default modes, synchronize, the documented artifact layout found, why the backend is
unavailable, `auto`'s choice on each kind of host, the options' record and its refusals, the traps' warnings
and the DLAMI venvs offered. A real profile through the CLI is tests/worker/test_neuron.py's."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from oplens.backends import registry as backends
from oplens.backends.neuron import checks as neuron_checks
from oplens.backends.neuron import options as neuron_options
from oplens.backends.neuron.artifacts import PROFILE_DIR, find_artifacts
from oplens.backends.neuron.device import NeuronBackend
from oplens.backends.neuron.options import NeuronOptions
from oplens.cli import main as cli_main
from oplens.records.errors import OpLensError
from oplens.records.run import Artifacts, NeffFile, NtffFile
from oplens.worker import events
from support.cli import flat
from support.neuron import TARGET, calls
from support.paths import STANDINS

# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def stand_in_torch_neuronx(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The stand-in importable in this process; yields its call record. Undone afterwards
    (torch.neuron removed; the PrivateUse1 rename to "neuron" cannot be undone, and is harmless)."""
    record = tmp_path / "standin-record.jsonl"
    monkeypatch.setenv("STANDIN_RECORD", str(record))
    monkeypatch.syspath_prepend(str(STANDINS))
    _forget_stand_in()
    yield record
    _forget_stand_in()


def _forget_stand_in() -> None:
    for name in [m for m in sys.modules if m == "torch_neuronx" or m.startswith("torch_neuronx.")]:
        del sys.modules[name]
    sys.modules.pop("torch.neuron", None)
    if hasattr(torch, "neuron"):
        delattr(torch, "neuron")


# --------------------------------------------------------------------------- configuration


def test_neuron_config_from_options_with_stand_in_torch_neuronx(stand_in_torch_neuronx: Path, tmp_path: Path) -> None:
    from torch_neuronx.profiling import NeuronProfiler, ProfileMode

    backend = NeuronBackend(
        NeuronOptions(
            modes=["DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"],
            capture_enabled_for_nc="0-1",
            max_events_per_nc=5000,
            neff_cache_dir=str(tmp_path / "neffs"),
        )
    )
    options = backend.profiler_options(tmp_path)
    config = options["experimental_config"]
    assert config.kwargs == {
        "modes": [ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
        "profile_output_dir": str(tmp_path / PROFILE_DIR),  # inside the run's (staging) directory
        "capture_enabled_for_nc": "0-1",
        "max_events_per_nc": 5000,
        "neff_cache_dir": str(tmp_path / "neffs"),
        "precache_node_info": True,  # the documented default, where OpLens is given none
        "correlate_device_time": True,  # this stand-in's signature takes it
    }
    ready = options["on_trace_ready"]
    assert isinstance(ready.__self__, NeuronProfiler) and ready.__func__ is NeuronProfiler.export_trace
    assert ready.__self__.config is config  # one NeuronConfig for the profiler and the export
    assert backend.activities() == [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    assert backend.writes_own_trace()
    info = backend.info()
    assert info.details["neuron_config"]["modes"] == ["DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"]
    assert info.details["neuron_config"]["correlate_device_time"] is True
    assert info.warnings == []
    assert (info.name, info.device_label) == ("neuron", "NEURON")


def test_default_modes_are_device_and_runtime_with_stand_in_torch_neuronx(stand_in_torch_neuronx: Path, tmp_path: Path) -> None:
    from torch_neuronx.profiling import ProfileMode

    config = NeuronBackend().profiler_options(tmp_path)["experimental_config"]
    assert config.kwargs["modes"] == [ProfileMode.DEVICE, ProfileMode.RUNTIME]
    # unset options are not passed: the vendor's own defaults apply
    assert config.kwargs["capture_enabled_for_nc"] is None and config.kwargs["neff_cache_dir"] is None
    assert config.kwargs["max_events_per_nc"] == 1_000_000


def test_stand_in_torch_neuronx_without_correlate_device_time_is_the_documented_form_not_a_warning(
    stand_in_torch_neuronx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """how-to-profile-pytorch.rst (2.33) names no correlate_device_time: its absence is the documented API, recorded
    as the generation; where device time comes from is said after the run (device_time), not warned of before."""
    monkeypatch.setenv("STANDIN_NO_CORRELATE", "1")
    backend = NeuronBackend()
    config = backend.profiler_options(tmp_path)["experimental_config"]
    assert "correlate_device_time" not in config.kwargs
    assert backend.info().details["api"] == "neuron-config"
    assert not any("correlate_device_time" in w for w in backend.info().warnings)


def test_synchronize_calls_torch_neuron_with_stand_in_torch_neuronx(stand_in_torch_neuronx: Path) -> None:
    import torch_neuronx  # noqa: F401  (registers torch.neuron)

    NeuronBackend().synchronize()
    assert len(calls(stand_in_torch_neuronx, "synchronize")) == 1
    assert NeuronBackend().device() == torch.device("neuron", 0)


# --------------------------------------------------------------------------- artifacts


def test_export_writes_the_documented_layout_and_oplens_finds_it_with_stand_in_torch_neuronx(
    stand_in_torch_neuronx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docs' "Expected output" (how-to-profile-workload.rst), a session capture:

    ./profile_output/<instance-id>_pid_<pid_0>/<timestamp>/ cpu_util.pb, host_mem.pb,
        neff_<hash_0>_vnc_0.neff, neff_<hash_1>_vnc_0.neff, ntrace.pb, profile_nc_0_session_0.ntff,
        trace.json, trace_info.pb"""
    monkeypatch.setenv("STANDIN_NEFFS", "2")
    monkeypatch.setenv("STANDIN_CORES", "3")
    monkeypatch.setenv("STANDIN_EMPTY_NTFFS", "1")
    backend = NeuronBackend(NeuronOptions(modes=["DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"]))
    with torch.profiler.profile(activities=backend.activities(), **backend.profiler_options(tmp_path)) as prof:
        (torch.ones(8, 8) * 2).sum()
    art = backend.artifacts(tmp_path)
    exported = calls(stand_in_torch_neuronx, "export_trace")
    assert len(exported) == 1
    assert art.device_profile_dir == str(Path(exported[0]["directory"]).relative_to(tmp_path))
    assert art.device_profile_dir.startswith(f"{PROFILE_DIR}/i-0standin0000000_pid_{os.getpid()}/")
    assert art.profile_output_dir == PROFILE_DIR
    assert art.trace_json == f"{art.device_profile_dir}/trace.json"
    assert json.loads((tmp_path / art.trace_json).read_text())["traceEvents"]
    assert sorted(Path(f).name for f in art.system_trace_files) == ["cpu_util.pb", "host_mem.pb", "ntrace.pb", "trace_info.pb"]
    assert [(Path(n.path).name, n.form, n.core) for n in art.neffs] == [
        ("neff_395760075800974_vnc_0.neff", "session", 0), ("neff_395760075800975_vnc_0.neff", "session", 0)]  # fmt: skip
    assert [(Path(t.path).name, t.form, t.core, t.session, t.bytes > 0) for t in art.ntffs] == [
        ("profile_nc_0_session_0.ntff", "session", 0, 0, True),
        ("profile_nc_1_session_0.ntff", "session", 1, 0, True),
        ("profile_nc_2_session_0.ntff", "session", 2, 0, False),
    ]
    assert art.neff_ntff_pairs == []  # session captures need no 1:1 pairing (troubleshooting.rst)
    (profile,) = art.neuron_profiles
    assert profile.kind == "system" and profile.dir == art.device_profile_dir and len(profile.ntffs) == 3
    assert all(not Path(f).is_absolute() for f in art.files)
    # PrivateUse1's per-op device time is -1 where an op has none: never negative device time
    assert all(e.legacy_device_ns >= 0 for e in events.from_profiler(prof, per_op_device_time=True))


def test_find_artifacts_pairs_by_hash_in_the_layout_without_a_timestamp_level(tmp_path: Path) -> None:
    pid_dir = tmp_path / PROFILE_DIR / "i-0ade06f040a13f2bf_pid_210229"
    pid_dir.mkdir(parents=True)
    (pid_dir / "395760075800974_instid_0_vnc_0.ntff").write_bytes(b"x" * 10)
    (pid_dir / "neff_395760075800974.neff").write_bytes(b"n")
    (pid_dir / "111_instid_0_vnc_0.ntff").write_bytes(b"y")  # its NEFF is missing: no pair
    (pid_dir / "neff_222.neff").write_bytes(b"n")  # its NTFF is missing: no pair
    art = find_artifacts(tmp_path)
    assert art.device_profile_dir == f"{PROFILE_DIR}/i-0ade06f040a13f2bf_pid_210229"
    assert [(p.hash, p.ntff_bytes) for p in art.neff_ntff_pairs] == [("395760075800974", 10)]
    assert art.trace_json == "" and art.system_trace_files == []
    assert find_artifacts(tmp_path / "nothing") == Artifacts()


# --------------------------------------------------------------------------- availability and auto


def test_unavailable_reasons_with_stand_in_torch_neuronx(stand_in_torch_neuronx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert NeuronBackend.unavailable_reason() is None
    _forget_stand_in()
    monkeypatch.setenv("STANDIN_NEURON_CORES", "0")
    reason = NeuronBackend.unavailable_reason()
    assert reason is not None and "sees no NeuronCore" in reason
    _forget_stand_in()
    monkeypatch.setenv("STANDIN_PYPI_STUB", "1")
    reason = NeuronBackend.unavailable_reason()
    assert reason is not None and "does not import (ImportError" in reason
    assert "the PyPI package of that name is a stub" in reason and "https://pip.repos.neuron.amazonaws.com" in reason


def test_without_torch_neuronx_the_reason_says_what_to_install_and_where() -> None:
    _forget_stand_in()
    reason = NeuronBackend.unavailable_reason()
    assert reason is not None and reason.startswith("torch_neuronx is not installed")
    version = ".".join(torch.__version__.split(".")[:2])
    assert f"pip install 'torch-neuronx=={version}.*' --extra-index-url https://pip.repos.neuron.amazonaws.com" in reason
    assert "Neuron Deep Learning AMI" in reason and "Trn2/Trn3" in reason
    with pytest.raises(backends.BackendUnavailable, match="--backend cpu"):
        backends.resolve("neuron")


def test_auto_picks_neuron_with_stand_in_torch_neuronx(stand_in_torch_neuronx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = backends.resolve("auto", {"neuron": NeuronOptions(modes=["RUNTIME"])})
    assert isinstance(chosen, NeuronBackend) and chosen.note == "auto: neuron is present"
    assert chosen.options == NeuronOptions(modes=["RUNTIME"])
    _forget_stand_in()
    monkeypatch.setenv("STANDIN_NEURON_CORES", "0")
    fallback = backends.resolve("auto")
    assert fallback.name in ("cuda", "cpu") and "neuron: torch_neuronx imported but sees no NeuronCore" in fallback.note


def test_auto_falls_back_to_cuda_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from oplens.backends.cuda import CudaBackend

    _forget_stand_in()
    monkeypatch.setattr(CudaBackend, "unavailable_reason", classmethod(lambda cls: None))  # as on a GPU host
    chosen = backends.resolve("auto")
    assert isinstance(chosen, CudaBackend)
    assert chosen.note.startswith("auto: cuda is present, fell back from Neuron (neuron: torch_neuronx is not installed")


# Each kind of host `auto` meets: (torch_neuronx importable, the NeuronCores it sees, a GPU) → the backend chosen
# and what its note names. The Neuron side is the stand-in; a GPU is CudaBackend's check answered as on a GPU host.
HOSTS = {
    "trn": (True, "1", False, "neuron", "auto: neuron is present"),
    "trn with a gpu too": (True, "2", True, "neuron", "auto: neuron is present"),
    "trn, no core visible": (
        True, "0", False, "cpu", "auto fell back to the CPU (neuron: torch_neuronx imported but sees no NeuronCore"
    ),
    "gpu": (False, "", True, "cuda", "auto: cuda is present, fell back from Neuron (neuron: torch_neuronx is not installed)"),
    "cpu": (False, "", False, "cpu", "auto fell back to the CPU (neuron: torch_neuronx is not installed; cuda: "),
}


@pytest.mark.parametrize("host", HOSTS)
def test_auto_on_each_kind_of_host(host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oplens.backends.cuda import CudaBackend

    neuronx, cores, gpu, chosen, note = HOSTS[host]
    _forget_stand_in()
    if neuronx:
        monkeypatch.setenv("STANDIN_RECORD", str(tmp_path / "standin-record.jsonl"))
        monkeypatch.setenv("STANDIN_NEURON_CORES", cores)
        monkeypatch.syspath_prepend(str(STANDINS))
    monkeypatch.setattr(CudaBackend, "unavailable_reason", classmethod(lambda cls: None if gpu else "torch sees no CUDA device"))
    try:
        backend = backends.resolve("auto")
    finally:
        _forget_stand_in()
    assert backend.name == chosen and backend.note.startswith(note), backend.note
    # what each backend passed over lacks, never how to install it: that is for a request of that backend by name
    assert "pip install" not in backend.note and "Neuron pip repository" not in backend.note


def test_auto_is_the_default_of_every_entry_point() -> None:
    from oplens.backends import registry
    from oplens.cli.commands import build_parser
    from oplens.engine.program import ProgramRequest
    from oplens.lsp.settings import Settings as EditorSettings
    from oplens.notebook.session import Settings as NotebookSettings

    assert registry.DEFAULT == "auto"
    parser = build_parser()
    for argv in (["profile", "t.py::fn"], ["compare", "t.py::f", "t.py::g"], ["run", "--target", "t.py::fn", "--", "t.py"],
                 ["doctor"], ["calibrate"]):  # fmt: skip
        assert parser.parse_args(argv).backend == "auto", argv
    assert EditorSettings().backend == NotebookSettings().backend == "auto"  # the editor's (generated) and `%oplens`'s
    assert next(f.default for f in dataclasses.fields(ProgramRequest) if f.name == "backend") == "auto"


# --------------------------------------------------------------------------- options (parent side, no torch)


def test_options_are_parsed_into_the_typed_record(tmp_path: Path) -> None:
    opts = neuron_options.parse(
        {"modes": "device, runtime,CPU_UTIL", "capture_enabled_for_nc": [0, 1], "max_events_per_nc": "2000000",
         "neff_cache_dir": "neffs", "device_index": 1},
        tmp_path,
    )  # fmt: skip
    assert opts == NeuronOptions(
        modes=["DEVICE", "RUNTIME", "CPU_UTIL"],
        capture_enabled_for_nc="0,1",
        max_events_per_nc=2_000_000,
        neff_cache_dir=str((tmp_path / "neffs").resolve()),
        device_index=1,
    )
    assert neuron_options.parse({}) == NeuronOptions()
    assert neuron_options.parse({"capture_enabled_for_nc": "", "neff_cache_dir": None}) == NeuronOptions()
    assert neuron_options.parse_cores("0,2-4, 8") == [0, 2, 3, 4, 8]


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"modes": "DEVICE,TRACE"}, "unknown Neuron profile mode 'TRACE'"),
        ({"modes": ""}, "no Neuron profile mode given"),
        ({"capture_enabled_for_nc": "0-"}, "bad NeuronCore list"),
        ({"capture_enabled_for_nc": "5-2"}, "bad NeuronCore range"),
        ({"max_events_per_nc": 0}, "must be a positive whole number"),
        ({"max_events_per_nc": "many"}, "must be a positive whole number"),
        ({"maxEventsPerNc": 5}, "unknown Neuron option 'maxEventsPerNc'"),
        ({"device_index": -1}, "the NeuronCore index must be 0 or more"),
    ],
)
def test_bad_options_are_bad_input(options: dict[str, Any], needle: str) -> None:
    with pytest.raises(OpLensError) as e:
        neuron_options.parse(options)
    assert e.value.kind == "bad_input" and e.value.exit_code == 2 and needle in e.value.message


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--backend", "cpu", "--neuron-modes", "DEVICE"], "the Neuron options apply to --backend neuron or auto"),
        (["--backend", "neuron", "--neuron-modes", "DEVICE,BOGUS"], "unknown Neuron profile mode 'BOGUS'"),
        (["--backend", "auto", "--neuron-cores", "x"], "bad NeuronCore list 'x'"),
        (["--backend", "neuron", "--neuron-max-events", "0"], "must be a positive whole number"),
    ],
)
def test_cli_neuron_options_are_checked_before_any_work(
    argv: list[str], needle: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["profile", "t.py::fn", *argv]) == 2
    assert needle in flat(capsys.readouterr().err)
    assert not (tmp_path / ".oplens" / "runs" / ".staging").exists() or not any((tmp_path / ".oplens/runs/.staging").iterdir())


# --------------------------------------------------------------------------- the documented traps (no torch)


def test_trap_warnings_name_the_fix(tmp_path: Path) -> None:
    assert "use --warmup 3 or more" in neuron_checks.warmup_warnings(0)[0]
    assert neuron_checks.warmup_warnings(3) == []
    (w,) = neuron_checks.core_warnings(NeuronOptions(), {"NEURON_RT_NUM_CORES": "8"})
    assert "NEURON_RT_NUM_CORES=8" in w and "the other 7 are empty" in w and "NEURON_RT_NUM_CORES=1" in w
    (w,) = neuron_checks.core_warnings(NeuronOptions(capture_enabled_for_nc="0-1"), {"NEURON_RT_NUM_CORES": "4"})
    assert "2 captured (--neuron-cores 0-1)" in w and "NEURON_RT_NUM_CORES=2" in w
    assert neuron_checks.core_warnings(NeuronOptions(), {"NEURON_RT_NUM_CORES": "1"}) == []
    assert neuron_checks.core_warnings(NeuronOptions(), {}) == []
    (w,) = neuron_checks.log_warnings("x\nWARN[0000] Warning: 1,001 trace events were dropped during capture\n", NeuronOptions())
    assert "dropped 1,001 trace events" in w and "raise --neuron-max-events (now 1,000,000" in w
    assert neuron_checks.log_warnings("all fine", NeuronOptions()) == []


def _session(run_dir: Path, ntff_sizes: list[int], neffs: int = 1) -> Artifacts:
    """A session capture's lists: NEFFs and NTFFs, never paired."""
    (run_dir / "p").mkdir(exist_ok=True)
    ntffs = []
    for core, size in enumerate(ntff_sizes):
        path = f"p/profile_nc_{core}_session_0.ntff"
        (run_dir / path).write_bytes(b"x" * size)
        ntffs.append(NtffFile(path, "session", core, 0, bytes=size))
    neff_files = [NeffFile(f"p/neff_{i}_vnc_0.neff", "session", str(i), 0) for i in range(neffs)]
    return Artifacts(neffs=neff_files, ntffs=ntffs)


def test_artifact_warnings_read_the_neff_and_ntff_lists(tmp_path: Path) -> None:
    (w,) = neuron_checks.artifact_warnings(_session(tmp_path, [10, 0, 0]), tmp_path, NeuronOptions())
    assert "2 of 3 NTFFs are empty" in w and "NEURON_RT_NUM_CORES" in w
    (w,) = neuron_checks.artifact_warnings(_session(tmp_path, [0, 0]), tmp_path, NeuronOptions())
    assert "every NTFF is empty" in w and "--warmup 3" in w
    (w,) = neuron_checks.artifact_warnings(_session(tmp_path, [5], neffs=12), tmp_path, NeuronOptions())
    assert "12 NEFFs" in w and "eager mode" in w and 'torch.compile(backend="neuron")' in w
    (w,) = neuron_checks.artifact_warnings(_session(tmp_path, [5], neffs=0), tmp_path, NeuronOptions())
    assert "no NEFF" in w and "--neff-cache-dir" in w
    (w,) = neuron_checks.artifact_warnings(Artifacts(), tmp_path, NeuronOptions())
    assert "DEVICE mode wrote no NTFF" in w
    assert neuron_checks.artifact_warnings(Artifacts(), tmp_path, NeuronOptions(modes=["RUNTIME"])) == []
    # unequal NEFF and NTFF counts are expected in a session capture: no warning of their own
    assert neuron_checks.artifact_warnings(_session(tmp_path, [5, 5, 5], neffs=2), tmp_path, NeuronOptions()) == []


def test_device_out_of_memory_under_device_mode_names_the_hbm_reservation() -> None:
    def failure(message: str) -> OpLensError:
        return OpLensError("user_exception", message, "Traceback ...")

    e = failure("fn raised: RuntimeError: NRT: failed to allocate (out of memory)")
    neuron_checks.explain_failure(e, "neuron", NeuronOptions())
    assert "reserves about 5 GB of HBM" in e.detail and "--neuron-modes RUNTIME" in e.detail
    e = failure("fn raised: RuntimeError: CUDA out of memory")
    neuron_checks.explain_failure(e, "auto", NeuronOptions())  # auto chose CUDA here: not a Neuron matter
    assert "HBM" not in e.detail
    e = failure("fn raised: RuntimeError: out of memory")
    neuron_checks.explain_failure(e, "neuron", NeuronOptions(modes=["RUNTIME"]))  # no DEVICE mode: nothing reserved
    assert "HBM" not in e.detail
    e = failure("fn raised: ValueError: bad shape")
    neuron_checks.explain_failure(e, "neuron", NeuronOptions())
    assert "HBM" not in e.detail


# --------------------------------------------------------------------------- an interpreter without torch_neuronx


def dlami_venv(root: Path, name: str, with_neuronx: bool = True) -> Path:
    """A Neuron DLAMI venv as the AMI lays it out under `root` (/opt/aws_neuronx_venv_<name>)."""
    venv = root / "opt" / f"aws_neuronx_venv_{name}"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "torch").mkdir(parents=True)
    if with_neuronx:
        (site / "torch_neuronx").mkdir()
        (site / "torch_neuronx" / "__init__.py").write_text("")
    return venv / "bin" / "python"


def test_an_interpreter_without_torch_neuronx_is_offered_the_dlami_venvs_that_have_it(tmp_path: Path) -> None:
    from oplens.backends import registry
    from oplens.backends.neuron import venvs

    old = dlami_venv(tmp_path, "pytorch_2_8")
    new = dlami_venv(tmp_path, "pytorch_2_9")
    dlami_venv(tmp_path, "jax_0_6", with_neuronx=False)  # another framework's venv: no torch_neuronx
    assert venvs.with_torch_neuronx(tmp_path) == [new, old]  # the newest first
    advice = venvs.advice("/usr/bin/python3", tmp_path, has_module=False)
    assert advice is not None and advice.backend == "neuron"
    assert advice.pythons == ["/opt/aws_neuronx_venv_pytorch_2_9/bin/python", "/opt/aws_neuronx_venv_pytorch_2_8/bin/python"]
    assert advice.message.startswith("This interpreter (/usr/bin/python3) has no torch_neuronx")
    assert "the Neuron venv /opt/aws_neuronx_venv_pytorch_2_9 (or another of the 2 found) has it" in advice.message
    assert venvs.advice("/opt/aws_neuronx_venv_pytorch_2_9/bin/python", tmp_path, has_module=True) is None  # it has it
    assert venvs.advice("/usr/bin/python3", tmp_path / "elsewhere", has_module=False) is None  # no DLAMI here
    # through the registry: only for a request that may end on Neuron (auto, neuron), never for cpu or cuda
    assert [a.backend for a in registry.interpreter_advice("auto", "/usr/bin/python3", tmp_path)] == ["neuron"]
    assert registry.interpreter_advice("cpu", "/usr/bin/python3", tmp_path) == []
    assert registry.interpreter_advice("cuda", "/usr/bin/python3", tmp_path) == []


def test_an_interpreter_with_torch_neuronx_is_told_so_without_importing_it(stand_in_torch_neuronx: Path) -> None:
    from oplens.backends.neuron import venvs

    assert venvs.has_torch_neuronx()  # the stand-in on sys.path: found without importing it
    assert "torch_neuronx" not in sys.modules
