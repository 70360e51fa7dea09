"""pass^k and the latency percentiles."""

from __future__ import annotations

import itertools

import pytest

from agents.eval.metrics import median, p95, pass_hat


def test_pass_hat_k_is_the_share_of_k_subsets_of_the_tries_that_all_passed() -> None:
    # Three of four tries passed: pass^1 is the pass rate; pass^4 needs all four.
    assert [pass_hat(4, 3, k) for k in (1, 2, 3, 4)] == [0.75, 0.5, 0.25, 0.0]
    assert [pass_hat(4, 4, k) for k in (1, 2, 3, 4)] == [1.0] * 4
    # Against counting subsets by hand: the estimator is exactly that share.
    tries = [True, False, True, True, False, True]
    for k in range(1, len(tries) + 1):
        subsets = list(itertools.combinations(tries, k))
        assert pass_hat(len(tries), sum(tries), k) == pytest.approx(
            sum(all(s) for s in subsets) / len(subsets)
        )


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 4, 1), (3, 1, 0)])
def test_pass_hat_refuses_more_tries_than_there_were(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass"):
        pass_hat(n, c, k)


def test_median_and_nearest_rank_p95() -> None:
    assert median([]) is None and p95([]) is None
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    # Fewer than 20 values: the largest; with 100, the 95th smallest.
    assert p95([0.1, 0.5, 0.2]) == 0.5
    assert p95([float(i) for i in range(1, 101)]) == 95.0
