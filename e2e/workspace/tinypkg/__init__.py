"""A small package as real code is laid out: its modules import each other relatively."""

from .mlp import GatedMLP, make_inputs

__all__ = ["GatedMLP", "make_inputs"]
