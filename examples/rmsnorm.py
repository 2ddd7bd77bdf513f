"""RMSNorm three ways: the case study of "Profiling TorchNeuron, part 1".

Profile each variant with OpLens and compare them:

    oplens compare examples/rmsnorm.py::rmsnorm_naive examples/rmsnorm.py::rmsnorm_fused \
        examples/rmsnorm.py::rmsnorm_compiled --args "make_inputs()"

`make_inputs()` builds the arguments on the CPU; OpLens moves them to the profiled device,
so the same expression serves the CPU, CUDA and Neuron backends.
"""

import torch

EPS = 1e-6


def make_inputs(batch: int = 4, seq: int = 1024, hidden: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """The case study's inputs: activations (batch, seq, hidden) and the norm weight (hidden,)."""
    torch.manual_seed(0)
    return torch.randn(batch, seq, hidden), torch.ones(hidden)


def rmsnorm_naive(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """One operation per line: each is its own dispatch and its own intermediate tensor."""
    x_sq = x * x
    mean_sq = x_sq.mean(dim=-1, keepdim=True)
    mean_eps = mean_sq + EPS
    inv_rms = torch.rsqrt(mean_eps)
    x_norm = x * inv_rms
    return x_norm * w


def rmsnorm_fused(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The builtin: one fused kernel."""
    return torch.rms_norm(x, (x.shape[-1],), w, EPS)


_compiled: dict[str, object] = {}


def _compiled_for(device: torch.device):  # type: ignore[no-untyped-def]
    """torch.compile the naive variant once per device type, with that device's compiler backend."""
    if device.type not in _compiled:
        backend = "neuron" if device.type == "neuron" else "inductor"
        _compiled[device.type] = torch.compile(rmsnorm_naive, backend=backend, fullgraph=True)
    return _compiled[device.type]


def rmsnorm_compiled(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The naive variant under torch.compile(fullgraph=True): one compiled region."""
    return _compiled_for(x.device)(x, w)
