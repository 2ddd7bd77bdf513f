"""STAND-IN device (tests only): tensors that report `neuron:0` and compute on the CPU.

TorchNeuron registers the `neuron` device (PrivateUse1) in C++, so `tensor.to("neuron")` works and
every op dispatches to it. The stand-in's default keeps tensors on the CPU (the tests build their inputs
there); with STANDIN_TENSORS=device it gives the device a Python backend instead, the way torch's own
`torch.utils.backend_registration._setup_privateuseone_for_python_backend` documents it (its hook and
device guard, and `torch.library` kernels for the PrivateUse1 key, as torch's
test/test_privateuseone_python_backend.py does): a tensor on `neuron:0` is a wrapper around a CPU tensor,
each op unwraps, runs on the CPU and wraps its results. So a function whose inputs the backend moves to
the device (`oplens doctor`'s probe) runs as it would on a host, with nothing on a device.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._pytree import tree_map
from torch.utils.backend_registration import _DummyDeviceGuard, _DummyPrivateUse1Hook

from torch_neuronx import memory

DEVICE = torch.device("neuron", 0)


class OnDevice(torch.Tensor):
    """A tensor on the stand-in's `neuron:0`: its data a CPU tensor (`.held`)."""

    held: torch.Tensor

    @staticmethod
    def __new__(cls, held: torch.Tensor) -> OnDevice:
        r = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, held.size(), strides=held.stride(), dtype=held.dtype, device=DEVICE, requires_grad=held.requires_grad
        )
        r.held = held
        weakref.finalize(r, memory.release, memory.hold(held))  # the device's block, counted (memory.py)
        return r  # type: ignore[no-any-return]

    def __repr__(self) -> str:  # type: ignore[override]
        return f"{self.held!r} (stand-in neuron:0)"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        memory.ran_op()
        if func is torch.ops.aten._to_copy.default:  # .to(device): the CPU keeps the data, the device wraps it
            src = _unwrap(args[0])
            target = kwargs.pop("device", None)
            out = func(src, **kwargs)
            return out if target is not None and torch.device(target).type == "cpu" else OnDevice(out)
        out = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
        if func is torch.ops.aten.copy_.default:
            return args[0]
        return tree_map(lambda t: OnDevice(t) if isinstance(t, torch.Tensor) and not isinstance(t, OnDevice) else t, out)


def _unwrap(a: Any) -> Any:
    if isinstance(a, OnDevice):
        return a.held
    if isinstance(a, torch.device) and a.type == "neuron":
        return torch.device("cpu")
    return a


def _empty_strided(size: Any, stride: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                   pin_memory: Any = None) -> OnDevice:  # fmt: skip
    return OnDevice(torch.empty_strided(size, stride, dtype=dtype))


def _empty(size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
           memory_format: Any = None) -> OnDevice:  # fmt: skip
    return OnDevice(torch.empty(size, dtype=dtype))


def _copy_from(src: Any, dst: Any, non_blocking: bool = False) -> Any:
    _unwrap(dst).copy_(_unwrap(src))
    return dst


_LIB: list[torch.library.Library] = []  # kept alive: the kernels stay registered while it lives


def install() -> None:
    """Give PrivateUse1 (already renamed `neuron`, its module registered) a Python backend."""
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._C._acc.register_python_privateuseone_hook(_DummyPrivateUse1Hook())  # type: ignore[attr-defined]
    torch._C._acc.register_python_privateuseone_device_guard(_DummyDeviceGuard())  # type: ignore[attr-defined]
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty_strided", _empty_strided, "PrivateUse1")
    lib.impl("empty.memory_format", _empty, "PrivateUse1")
    lib.impl("_copy_from", _copy_from, "PrivateUse1")
    _LIB.append(lib)
