"""The numbers of an eval: pass^k per flow, and the turn-latency percentiles.

pass^k is τ-bench's (Yao et al. 2024; τ²-bench keeps it): the chance that k independent
tries of a task all succeed. From n ≥ k tries of which c passed, its unbiased estimate is
C(c, k) / C(n, k), the share of the k-subsets of the n tries in which every try passed.
pass^1 is the plain pass rate; pass^k falls as k grows unless the flow never fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def pass_hat(n: int, c: int, k: int) -> float:
    """pass^k estimated from `n` tries of which `c` passed (1 <= k <= n)."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n, got n={n} c={c} k={k}")
    return math.comb(c, k) / math.comb(n, k)


def median(values: Sequence[float]) -> float | None:
    """The median, None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def p95(values: Sequence[float]) -> float | None:
    """The 95th percentile by nearest rank: a value that was measured, the smallest with at
    least 95% of the values at or below it (with fewer than 20 values, the largest)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
