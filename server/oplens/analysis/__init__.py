"""Pure analysis of profiler events and runs, one module per concern:

    attribution   events → each line's and op's time (and `nest`, the nesting the other views share)
    chrome_trace  a stored trace.json → events again (`oplens analyze`)
    collectives   which ops are collectives
    ops           the op and dtype table (kinds, element sizes) that work and insights read
    work          each line's FLOPs and bytes (from the shapes call)
    memory        each line's allocations, peak and temporaries (from the shapes call), and its insight
    roofline      each line's bound against the device's ceilings, and the headroom insight
    insights      the rules over the attribution (hot line, fusable chain, transfers, noise)
    stats         robust estimates, spreads, noise, differences
    ranks         a distributed capture's rank parts merged into one run
    peaks         the vendors' published device ceilings

No torch (events arrive as plain `RawEvent`s), so every rule here is tested on stored or
synthetic events. Depends only on `oplens.records`.
"""
