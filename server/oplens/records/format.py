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
    """`3 * 2**20` → `3.0 MiB`; smaller sizes in KiB, under 1 KiB in bytes."""
    if n < 1024:
        return f"{n:,.0f} B"
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 1024:,.1f} KiB"


def fmt_flops(n: float) -> str:
    """`2.5e9` → `2.50 GFLOP`: floating-point operations, in steps of 1000."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} FLOP"


def fmt_ratio(ratio: float) -> str:
    """A change as a user reads it: `2.1×` from 1.5 times up, else `+35 %` / `-40 %`."""
    if ratio >= 1.5:
        return f"{ratio:.1f}×"
    return f"{(ratio - 1) * 100:+.0f} %"


def fmt_change(verdict: str, ratio: float | None) -> str:
    """A diff's verdict as a mark: `▲ 2.1×` or `▲ 35 %` slower, `▼ 40 %` faster (time saved),
    `new`; nothing where the line is the same (or removed)."""
    if verdict == "new":
        return "new"
    if verdict not in ("slower", "faster"):
        return ""
    arrow = "▲" if verdict == "slower" else "▼"
    if ratio is None:
        return arrow
    if verdict == "slower" and ratio >= 1.5:
        return f"{arrow} {ratio:.1f}×"
    return f"{arrow} {abs(ratio - 1) * 100:.0f} %"
