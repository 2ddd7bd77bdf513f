"""What `oplens profile` and `oplens run` requests share: the defaults of their numbers and one check.

`profile.validate` and `program.validate` both call `check` before any work is spent; each names
the calls by its own flags (`--warmup`/`--iters` for profile, `--skip`/`--calls` for run).
"""

from __future__ import annotations

from typing import Any

from oplens.backends import registry
from oplens.records.errors import bad_input

DEFAULT_WARMUP = 3
DEFAULT_ITERS = 20
DEFAULT_PROFILER_WARMUP = 2  # profiled-but-dropped iterations: the profiler's start-up lands on them
DEFAULT_TIMEOUT_S = 300.0

PROFILE_FLAGS = ("--warmup", "--iters")  # the calls before the profiled ones, the profiled ones
RUN_FLAGS = ("--skip", "--calls")


def check(
    backend: str,
    warmup: int,
    iters: int,
    profiler_warmup: int,
    timeout_s: float,
    backend_options: dict[str, Any],
    flags: tuple[str, str] = PROFILE_FLAGS,
) -> None:
    """The backend known and the numbers in range (each named by its front end's `flags`); every
    candidate backend without options in `backend_options` given its defaults."""
    if backend not in registry.NAMES:
        raise bad_input(f"unknown backend {backend!r}", f"choose one of: {', '.join(registry.NAMES)}")
    warmup_flag, iters_flag = flags
    for bad, message in ((warmup < 0, f"{warmup_flag} must be 0 or more (got {warmup})"),
                         (iters < 1, f"{iters_flag} must be 1 or more (got {iters})"),
                         (profiler_warmup < 0, f"--profiler-warmup must be 0 or more (got {profiler_warmup})"),
                         (timeout_s <= 0, f"--timeout must be positive (got {timeout_s:g})")):  # fmt: skip
        if bad:
            raise bad_input(message)
    for name in registry.candidates(backend):
        backend_options.setdefault(name, registry.get(name).options_type())
