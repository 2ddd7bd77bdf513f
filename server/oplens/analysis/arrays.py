"""The arrays the analysis computes on: numpy where the environment has it, else `purearrays`, a
pure-Python stand-in for the part of numpy the analysis uses (pure: no torch).

The language server ships with the editor extension (its pure-Python libraries bundled), and runs,
as its worker does, in the user's interpreter: numpy is compiled, so it cannot be bundled, and torch
does not require it. Where it is missing the same code runs on lists, slower (docs/benchmarks.md
measures by how much). `OPLENS_PURE_PYTHON=1` picks the stand-in even where numpy is there (the tests
and the benchmark compare the two).

Modules import `np` from here, never numpy itself; mypy checks them against numpy's types, which the
stand-in imitates for the calls they make.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:

    def _load():
        if os.environ.get("OPLENS_PURE_PYTHON", "") in ("", "0"):
            try:
                import numpy

                return numpy
            except ImportError:
                pass
        from oplens.analysis import purearrays

        return purearrays

    np = _load()

# numpy (True) or the pure-Python stand-in (False): what this process computes with
NUMPY: bool = np.__name__ == "numpy"

__all__ = ["NUMPY", "np"]
