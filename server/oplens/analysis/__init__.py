"""Pure analysis of profiler events: per-line attribution, statistics and insights.

No torch (events arrive as plain `RawEvent`s), so every rule here is tested on stored or
synthetic events. Depends only on `oplens.records`.
"""
