"""How OpLens writes times for people (shared by the CLI and the language server)."""

from __future__ import annotations


def fmt_us(us: float) -> str:
    """`1164.5` → `1.16 ms`; `125` → `125.0 µs`."""
    if us >= 1000:
        return f"{us / 1000:,.2f} ms"
    return f"{us:,.1f} µs"


def fmt_share(pct: float) -> str:
    return f"{pct:.1f} %"


def fmt_bytes(n: float) -> str:
    """`3 * 2**20` → `3.0 MiB`; smaller sizes in KiB."""
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 1024:,.1f} KiB"
