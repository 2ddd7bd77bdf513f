"""What every request to run sets, however its front end names it: one `Options` record, checked by `check` alone.

`ProfileRequest.options()`, `ProgramRequest.options()` and `%oplens`'s `Settings.options()` each give it; the
engine's `validate` checks it before any work is spent, and the language server checks it before a request is
queued (a bad one is invalid params there). `Names` says how a front end calls the numbers in its messages:
`--warmup`/`--iters` for profile, `--skip`/`--calls` for run, the editor's argument names for the editor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oplens.backends import registry
from oplens.records.errors import bad_input

DEFAULT_WARMUP = 3
DEFAULT_ITERS = 20
DEFAULT_PROFILER_WARMUP = 2  # profiled-but-dropped iterations: the profiler's start-up lands on them
DEFAULT_TIMEOUT_S = 300.0
# Rounds measured side by side (a compare whose rounds the user did not count, a profile with its earlier version
# beside it) run as many as take about FILL_S, at least the iterations asked for, at most MAX_ROUNDS: about the
# start-up of the second worker that a compare of two once paid, spent on calls instead. A difference of a few %
# needs the calls: 20 rounds of the case study on this 2-core machine told a 1.1x speed-up from none in 2 runs of
# 5 (bench/verdicts.py).
FILL_S = 3.0
MAX_ROUNDS = 200


@dataclass(frozen=True)
class Names:
    """How a front end names the settings in a bad one's message."""

    warmup: str = "--warmup"  # the calls before the profiled ones
    iters: str = "--iters"  # the profiled ones
    profiler_warmup: str = "--profiler-warmup"
    timeout: str = "--timeout"


PROFILE_FLAGS = Names()
RUN_FLAGS = Names("--skip", "--calls")


@dataclass
class Options:
    """A request's settings: where it runs, how many calls, how long it may take."""

    backend: str = registry.DEFAULT
    warmup: int = DEFAULT_WARMUP  # `oplens run`: --skip
    iters: int = DEFAULT_ITERS  # `oplens run`: --calls
    profiler_warmup: int = DEFAULT_PROFILER_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    # Each backend's options record by name (registry.parse_options); `check` gives the missing ones their defaults.
    backend_options: dict[str, Any] = field(default_factory=dict)
    names: Names = PROFILE_FLAGS


def check(options: Options) -> None:
    """The backend known and the numbers in range (each named as `options.names` says); every candidate
    backend without options in `options.backend_options` given its defaults."""
    if options.backend not in registry.NAMES:
        raise bad_input(f"unknown backend {options.backend!r}", f"choose one of: {', '.join(registry.NAMES)}")
    n = options.names
    for bad, message in ((options.warmup < 0, f"{n.warmup} must be 0 or more (got {options.warmup})"),
                         (options.iters < 1, f"{n.iters} must be 1 or more (got {options.iters})"),
                         (options.profiler_warmup < 0,
                          f"{n.profiler_warmup} must be 0 or more (got {options.profiler_warmup})"),
                         (options.timeout_s <= 0, f"{n.timeout} must be positive (got {options.timeout_s:g})")):  # fmt: skip
        if bad:
            raise bad_input(message)
    for name in registry.candidates(options.backend):
        options.backend_options.setdefault(name, registry.get(name).options_type())
