"""The provider's time limits: the defaults are the ones the documentation states, and the
client and the engine use the budget they are given (tests/cli/test_cli_provider.py measures
what the limits make of a hung or trickling provider)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import httpx

from agents.graph.context import RetryBudget
from agents.models.factory import make_model
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from tests.support.fake_mistral import FAKE_API_KEY

README = Path(__file__).resolve().parents[2] / "README.md"
# What `shopbot chat` may take from its start to its first request on a loaded machine (5 to
# 17 s measured on a busy 2-core one; tests/cli/test_cli_process.py measures it): the rest of
# the 45 s a person waits at most for a provider that never answers is the provider's.
START_UP_ALLOWANCE = 20.0


def test_the_default_limits_are_the_documented_ones() -> None:
    # Changing one means changing what the README and docs/provider-failures.md promise.
    assert RetryBudget() == RetryBudget(
        attempts=4,
        silence_timeout=10.0,
        timeout_attempts=2,
        base_delay=0.5,
        max_delay=8.0,
        max_retry_after=30.0,
        reply_deadline=120.0,
    )


def test_a_provider_that_never_answers_is_given_up_on_within_45_s() -> None:
    budget = RetryBudget()
    # Every attempt that may time out, and the longest (jittered) backoffs between them.
    backoffs = sum(
        min(budget.max_delay, budget.base_delay * 2 ** (n - 1)) * 1.2
        for n in range(1, budget.timeout_attempts)
    )
    silent = budget.timeout_attempts * budget.silence_timeout + backoffs
    assert silent + START_UP_ALLOWANCE <= 45.0
    assert silent < budget.reply_deadline  # the silence limit ends it, not the deadline


def readme_text() -> str:
    """The README's two points on a failing provider and its timeouts, on one line."""
    section = README.read_text().split("- **A busy or failing provider**", 1)[1]
    section = section.split("- **A damaged", 1)[0]
    return " ".join(section.split())


def test_the_readme_text_states_the_limits_as_they_are() -> None:
    budget, said = RetryBudget(), readme_text()
    assert f"up to {budget.max_retry_after:g} s" in said
    assert f"after {budget.attempts} attempts the turn fails cleanly" in said
    assert f"nothing for {budget.silence_timeout:g} s is given up and tried once more" in said
    assert budget.timeout_attempts == 2  # "tried once more"
    hung = math.ceil(budget.timeout_attempts * budget.silence_timeout + budget.base_delay)
    assert f"about {hung} s after the request" in said
    assert f"{budget.reply_deadline:g} s from its first request to its last token" in said
    # No other figure in seconds: each one said is one of the budget's.
    figures = {float(n) for n in re.findall(r"(\d+(?:\.\d+)?) s\b", said)}
    assert figures == {
        budget.max_retry_after,
        budget.silence_timeout,
        float(hung),
        budget.reply_deadline,
    }


def test_the_client_waits_for_a_byte_as_long_as_the_budget_says(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, api_key=FAKE_API_KEY)
    client = make_model(settings, silence_timeout=2.5).async_client  # type: ignore[attr-defined]
    assert client.timeout == httpx.Timeout(2.5)
    default = make_model(settings).async_client  # type: ignore[attr-defined]
    assert default.timeout == httpx.Timeout(RetryBudget().silence_timeout)


async def test_the_engine_gives_the_client_its_budgets_silence_limit(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, api_key=FAKE_API_KEY)
    engine = ShopBotEngine(settings, retry=RetryBudget(silence_timeout=0.75))
    try:
        assert engine.model.async_client.timeout == httpx.Timeout(0.75)  # type: ignore[attr-defined]
        assert engine.retry.silence_timeout == 0.75
    finally:
        await engine.aclose()
