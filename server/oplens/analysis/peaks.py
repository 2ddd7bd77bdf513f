"""The vendors' published ceilings of the devices OpLens knows, with where each figure is written.

Pure data and a lookup by the device's name as a backend reports it ("NVIDIA H200", "NVIDIA H100 80GB
HBM3", "NVIDIA A100-SXM4-80GB") or as a user names it ("Trainium2", "trn2", "NeuronCore-v3").
`spec(name)` gives the figures a calibration on that device is set beside (`worker/calibrate.py`);
`ceilings_from_spec(name)` the same as a `DeviceCeilings` with `source: "spec"` (no run uses it yet:
a run's ceilings are always the calibration's). The CPU has no published figure here: its ceilings
come from the calibration only.

Every figure is dense (no structured sparsity) and in FLOP/s or bytes/s. A figure the source does
not state is left out, never derived: where a chip's figure exists but not a NeuronCore's, only the
chip has it.

NVIDIA (from each GPU's datasheet, the SXM board): the datasheets give the tensor-core figures of
TF32, BF16 and FP16 on Hopper only "with sparsity" (their footnote); the dense figure is half of it,
as 2:4 structured sparsity doubles the tensor cores' throughput. The A100 datasheet gives both.

AWS Trainium (the AWS Neuron documentation, github.com/aws-neuron/aws-neuron-sdk, read at commit
81ce03ae261e12925e53437a0f690478e6366155; paths below). The docs state per chip: FP8, BF16/FP16/TF32
and FP32 TFLOPS and the HBM bandwidth; per NeuronCore: the Tensor Engine's BF16/FP16(/TF32) and FP8
TFLOPS, and FP32 only for NeuronCore-v4. They give no HBM bandwidth per NeuronCore. Where two pages
differ, the architecture page of the chip is used and the other named in `notes`. A calibration runs
on one (logical) NeuronCore, so it is compared with the NeuronCore's figures per *logical* core:
`spec` multiplies the physical core's by the LNC degree (`logical_cores`) and says where that came from.

Logical NeuronCores (about-neuron/arch/neuron-features/logical-neuroncore-config.rst, read at commit
732f514f063dbf6ee5f48fc2aeea236695828af3): "The ``NEURON_LOGICAL_NC_CONFIG`` runtime environment
variable controls how many physical NeuronCores are grouped to make up a logical NeuronCore"; "LNC can
only be set to **1** or **2** ... On Trn2, each chip has 8 physical NeuronCores. With LNC=2 (default),
these are grouped into 4 Logical NeuronCores ... LNC applies only to Trn2 and Trn3 instances". The
compiler error page compiler/error-codes/EVRF066.rst: "neuronx-cc defaults to LNC=2 on Trn2 and later";
EARG001.rst: "On trn1, only lnc=1 is supported". So: the variable where it is 1 or 2, else 2 on
Trn2/Trn3, and always 1 on Trn1. The variable is read from the environment the worker gets (the
parent's, which the worker inherits); no torch is needed.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from oplens.records.ceilings import BFLOAT16, FLOAT8, FLOAT16, FLOAT32, SPEC, TF32, DeviceCeilings, SpecCeilings

T = 1e12  # TFLOP/s
TB = 1e12  # TB/s (decimal, as the vendors write it)
GB = 1e9
GIB = 2**30

NEURON_DOCS = "aws-neuron/aws-neuron-sdk: "
NEURON_COMMIT = "81ce03ae261e12925e53437a0f690478e6366155"

LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"  # the runtime's LNC degree: physical NeuronCores per logical one
LNC_DOC = NEURON_DOCS + "about-neuron/arch/neuron-features/logical-neuroncore-config.rst"
LNC_VALUES = (1, 2)  # "LNC can only be set to 1 or 2"

CHIP = "chip"
GPU = "GPU"
NEURONCORE = "NeuronCore"


@dataclass(frozen=True)
class KnownDevice:
    key: str  # "h200-sxm", "trn2"
    title: str
    match: str  # a regular expression searched in the lower-cased device name
    exclude: str = ""  # a regular expression that, found, rules the device out (another board of the same GPU)
    figures: tuple[SpecCeilings, ...] = ()  # per unit; the first is what a calibration is compared with
    aliases: tuple[str, ...] = ()  # short names a user may give (`oplens calibrate --spec a100`)
    default_lnc: int = 0  # Trainium: the LNC degree where NEURON_LOGICAL_NC_CONFIG does not set one (0: no NeuronCores)
    lnc_settable: bool = False  # whether the runtime's variable applies (Trn2 and Trn3; Trn1 is LNC=1 only)
    lnc_doc: str = ""  # where the default is written

    def matches(self, name: str) -> bool:
        text = name.strip().lower()
        if text == self.key or text in self.aliases:
            return True
        return bool(re.search(self.match, text)) and not (self.exclude and re.search(self.exclude, text))

    def figures_for(self, unit: str | None = None) -> SpecCeilings | None:
        for f in self.figures:
            if unit is None or f.unit == unit:
                return _copy(f)
        return None


def _copy(spec: SpecCeilings) -> SpecCeilings:
    return dataclasses.replace(spec, dtype_peaks=dict(spec.dtype_peaks))


_HOPPER_NOTE = "TF32/BF16/FP16: the datasheet's figure 'with sparsity' halved (dense)"

KNOWN: tuple[KnownDevice, ...] = (
    KnownDevice(
        "a100-sxm-80gb",
        "NVIDIA A100 SXM 80GB",
        match=r"\ba100\b(?=.*\bsxm)(?=.*\b80\s*gb\b)",
        aliases=("a100",),
        figures=(
            SpecCeilings(
                name="NVIDIA A100 SXM 80GB",
                unit=GPU,
                dtype_peaks={FLOAT32: 19.5 * T, TF32: 156 * T, BFLOAT16: 312 * T, FLOAT16: 312 * T},
                bytes_per_s=2039 * GB,
                source_url_or_doc="NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column)",
                notes="dense tensor-core figures as the datasheet gives them (312/624 TFLOPS: dense/sparse)",
            ),
        ),
    ),
    KnownDevice(
        # The SXM5 board reports itself as "NVIDIA H100 80GB HBM3"; the PCIe and NVL boards have other figures.
        "h100-sxm",
        "NVIDIA H100 SXM",
        match=r"\bh100\b",
        exclude=r"\bpcie\b|\bnvl\b",
        aliases=("h100",),
        figures=(
            SpecCeilings(
                name="NVIDIA H100 SXM",
                unit=GPU,
                dtype_peaks={FLOAT32: 67 * T, TF32: 989 / 2 * T, BFLOAT16: 1979 / 2 * T, FLOAT16: 1979 / 2 * T},
                bytes_per_s=3.35 * TB,
                source_url_or_doc="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column)",
                notes=_HOPPER_NOTE,
            ),
        ),
    ),
    KnownDevice(
        "h200-sxm",
        "NVIDIA H200 SXM",
        match=r"\bh200\b",  # not GH200 (Grace Hopper): another device
        exclude=r"\bpcie\b|\bnvl\b",
        aliases=("h200",),
        figures=(
            SpecCeilings(
                name="NVIDIA H200 SXM",
                unit=GPU,
                dtype_peaks={FLOAT32: 67 * T, TF32: 989 / 2 * T, BFLOAT16: 1979 / 2 * T, FLOAT16: 1979 / 2 * T},
                bytes_per_s=4.8 * TB,
                source_url_or_doc="NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column)",
                notes=_HOPPER_NOTE,
            ),
        ),
    ),
    KnownDevice(
        "trn1",
        "AWS Trainium (Trn1, NeuronCore-v2)",
        match=r"\btrainium1\b|\btrainium\b(?![ -]?\d)|\btrn1[a-z]*\b|neuroncore[ -]?v2\b",
        default_lnc=1,  # "On trn1, only lnc=1 is supported"
        lnc_doc=NEURON_DOCS + "compiler/error-codes/EARG001.rst",
        figures=(
            SpecCeilings(
                # Per NeuronCore-v2 the docs give only the Tensor Engine's "over 90 TFLOPS of FP16/BF16";
                # no FP32, TF32 or FP8 figure and no memory bandwidth per NeuronCore (left out).
                name="NeuronCore-v2",
                unit=NEURONCORE,
                dtype_peaks={BFLOAT16: 90 * T, FLOAT16: 90 * T},
                bytes_per_s=None,
                source_url_or_doc=NEURON_DOCS + "about-neuron/arch/neuron-hardware/neuron-core-v2.rst",
                notes="'over 90 TFLOPS of FP16/BF16' (a lower bound); no FP32 figure and no bandwidth per NeuronCore",
            ),
            SpecCeilings(
                name="Trainium (2 × NeuronCore-v2)",
                unit=CHIP,
                dtype_peaks={FLOAT32: 47.5 * T, TF32: 190 * T, BFLOAT16: 190 * T, FLOAT16: 190 * T, FLOAT8: 190 * T},
                bytes_per_s=820 * GIB,
                source_url_or_doc=NEURON_DOCS + "about-neuron/arch/neuron-hardware/trainium.rst",
                notes="'190 FP16/BF16/cFP8/TF32 TFLOPS, and 47.5 FP32', '820 GiB/sec' (float8: cFP8); "
                "trainium2.rst's comparison table rounds them to 191 and 48 TFLOPS and 0.8 TB/sec",
            ),
        ),
    ),
    KnownDevice(
        "trn2",
        "AWS Trainium2 (Trn2, NeuronCore-v3)",
        match=r"\btrainium[ -]?2\b|\btrn2[a-z]*\b|neuroncore[ -]?v3\b",
        default_lnc=2,  # "On Trn2, each chip has 8 physical NeuronCores. With LNC=2 (default), ..."
        lnc_settable=True,
        lnc_doc=LNC_DOC,
        figures=(
            SpecCeilings(
                # Per NeuronCore-v3 the docs give the Tensor Engine's BF16/FP16/TF32 and cFP8 figures; no FP32
                # figure (the Vector and Scalar engines' 1 and 1.2 TFLOPS of FP32 are not the matmul's) and
                # no bandwidth per NeuronCore (left out).
                name="NeuronCore-v3",
                unit=NEURONCORE,
                dtype_peaks={TF32: 79 * T, BFLOAT16: 79 * T, FLOAT16: 79 * T, FLOAT8: 158 * T},
                bytes_per_s=None,
                source_url_or_doc=NEURON_DOCS + "about-neuron/arch/neuron-hardware/neuron-core-v3.rst",
                notes="'158 cFP8 TFLOPS, and 79 BF16/FP16/TF32 TFLOPS' (float8: cFP8); no FP32 figure and no "
                "bandwidth per NeuronCore; these per physical core",
            ),
            SpecCeilings(
                name="Trainium2 (8 × NeuronCore-v3)",
                unit=CHIP,
                dtype_peaks={FLOAT32: 181 * T, TF32: 667 * T, BFLOAT16: 667 * T, FLOAT16: 667 * T, FLOAT8: 1299 * T},
                bytes_per_s=2.9 * TB,
                source_url_or_doc=NEURON_DOCS + "about-neuron/arch/neuron-hardware/trainium2.rst",
                notes="'1,299 FP8 TFLOPS, 667 BF16/FP16/TF32 TFLOPS, 181 FP32 TFLOPS', '2.9 TB/sec'; the NKI "
                "Trainium2 guide of Neuron 2.29.0 said 3TB/s",
            ),
        ),
    ),
    KnownDevice(
        "trn3",
        "AWS Trainium3 (Trn3, NeuronCore-v4)",
        match=r"\btrainium[ -]?3\b|\btrn3[a-z]*\b|neuroncore[ -]?v4\b",
        default_lnc=2,  # "neuronx-cc defaults to LNC=2 on Trn2 and later"
        lnc_settable=True,
        lnc_doc=NEURON_DOCS + "compiler/error-codes/EVRF066.rst",
        figures=(
            SpecCeilings(
                name="NeuronCore-v4",
                unit=NEURONCORE,
                dtype_peaks={FLOAT32: 20 * T, TF32: 79 * T, BFLOAT16: 79 * T, FLOAT16: 79 * T, FLOAT8: 315 * T},
                bytes_per_s=None,
                source_url_or_doc=NEURON_DOCS + "about-neuron/arch/neuron-hardware/neuron-core-v4.rst",
                notes="'315 MXFP8/MXFP4 TFLOPS', '79 BF16/FP16/TF32 and 20 FP32 TFLOPS' (float8: MXFP8); no "
                "bandwidth per NeuronCore; these per physical core",
            ),
            SpecCeilings(
                name="Trainium3 (8 × NeuronCore-v4)",
                unit=CHIP,
                dtype_peaks={FLOAT32: 183 * T, TF32: 671 * T, BFLOAT16: 671 * T, FLOAT16: 671 * T, FLOAT8: 2517 * T},
                bytes_per_s=4.9 * TB,
                source_url_or_doc=NEURON_DOCS + "about-neuron/arch/neuron-hardware/trainium3.rst",
                notes="'2,517 MXFP8/MXFP4 TFLOPS, 671 BF16/FP16/TF32 TFLOPS, 183 FP32 TFLOPS', '4.9 TB/sec' "
                "(float8: MXFP8); the NKI Trainium3 guide says 4.7 TB/s",
            ),
        ),
    ),
)


def keys() -> list[str]:
    """The short names of the known devices, for `--spec`."""
    return [d.aliases[0] if d.aliases else d.key for d in KNOWN]


def find(name: str) -> KnownDevice | None:
    """The known device a name denotes, or None (the CPU, another GPU, another board of a known GPU)."""
    if not name.strip():
        return None
    return next((d for d in KNOWN if d.matches(name)), None)


def logical_cores(device: KnownDevice, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """The LNC degree on `device` (physical NeuronCores per logical one) and where it came from:
    `NEURON_LOGICAL_NC_CONFIG` in `env` (default: this process's, which the worker inherits) where it
    is 1 or 2 on a device it applies to, else the documented default. (0, "") for a device without
    NeuronCores."""
    if not device.default_lnc:
        return 0, ""
    env = os.environ if env is None else env
    raw = env.get(LNC_ENV, "").strip()
    if not device.lnc_settable:
        return device.default_lnc, f"LNC={device.default_lnc}, the only degree {device.title} supports ({device.lnc_doc})" + (
            f"; {LNC_ENV}={raw} does not apply" if raw else "")  # fmt: skip
    if raw.isdigit() and int(raw) in LNC_VALUES:
        return int(raw), f"LNC={int(raw)} from {LNC_ENV}={raw} in the worker's environment"
    why = f"{LNC_ENV}={raw!r} is not 1 or 2, so" if raw else f"{LNC_ENV} unset:"
    return device.default_lnc, f"LNC={device.default_lnc}, {why} the documented default ({device.lnc_doc})"


def spec(name: str, unit: str | None = None, env: Mapping[str, str] | None = None) -> SpecCeilings | None:
    """The vendor's figures for `name` (a copy): per `unit` ("GPU", "chip", "NeuronCore"), or by
    default those a calibration on it is compared with (a GPU's; a NeuronCore's on Trainium). A
    NeuronCore's are per *logical* core: the physical core's times the LNC degree that
    `logical_cores` finds in `env`, named in `logical_cores_from` and the notes."""
    device = find(name)
    found = device.figures_for(unit) if device is not None else None
    if device is None or found is None or found.unit != NEURONCORE:
        return found
    lnc, source = logical_cores(device, env)
    return dataclasses.replace(
        found,
        name=found.name if lnc == 1 else f"{lnc} × {found.name}",
        unit=f"logical {NEURONCORE} (LNC={lnc})",
        dtype_peaks={k: v * lnc for k, v in found.dtype_peaks.items()},
        bytes_per_s=found.bytes_per_s * lnc if found.bytes_per_s else found.bytes_per_s,
        notes=f"{found.notes}; per logical NeuronCore: {source}",
        logical_cores=lnc,
        logical_cores_from=source,
    )


def ceilings_from_spec(name: str, unit: str | None = None, env: Mapping[str, str] | None = None) -> DeviceCeilings | None:
    """The vendor's figures as the device's ceilings (`source: "spec"`), where nothing was measured;
    None for a device without published figures or without a bandwidth for that unit."""
    found = spec(name, unit, env)
    if found is None or not found.bytes_per_s or not found.dtype_peaks:
        return None
    return DeviceCeilings(name=name, dtype_peaks=dict(found.dtype_peaks), bytes_per_s=found.bytes_per_s, source=SPEC, spec=found)
