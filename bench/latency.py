"""Percentiles of latency samples recorded in nanoseconds."""

from __future__ import annotations

import math
from collections.abc import Sequence

PERCENTILES = (50, 90, 99)


def percentile(ordered: Sequence[int], rank: float) -> int:
    """Nearest-rank percentile of an ascending sequence."""
    if not ordered:
        return 0
    index = max(0, math.ceil(rank / 100 * len(ordered)) - 1)
    return ordered[index]


def summary_ms(samples: Sequence[int], ranks: Sequence[float] = PERCENTILES) -> dict[str, float]:
    """p50/p90/p99 (or the given ranks) and max of nanosecond samples, in milliseconds."""
    ordered = sorted(samples)
    figures = {f"p{rank:g}_ms": percentile(ordered, rank) / 1e6 for rank in ranks}
    figures["max_ms"] = (ordered[-1] if ordered else 0) / 1e6
    return {name: round(value, 3) for name, value in figures.items()}
