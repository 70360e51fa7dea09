"""Calling the model: retry what is transient, fail the turn cleanly when the provider is gone.

`ChatMistralAI` retries only transport errors, and neither LangGraph's `RetryPolicy` nor
LangChain's `ModelRetryMiddleware` honours a `Retry-After` header, so this small loop does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Callable, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import ensure_config, merge_configs
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from agents.errors import IncompleteReply, UnreadableReply
from agents.events import Retrying
from agents.graph.context import RetryBudget, ShopContext
from agents.graph.reporting import report
from agents.graph.services import turn
from agents.models.streaming import TextSink, TickBatch
from agents.safety.redaction import StreamRedactor, redact

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class ProviderUnavailable(Exception):
    """The model provider failed after retries; the message is safe to show."""


def _retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        # "nan" would retry at once, without backoff; "inf" is no more a delay than "soon".
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import datetime as dt

    return max(0.0, float((moment - dt.datetime.now(dt.UTC)).total_seconds()))


def retry_delay(
    exc: BaseException, attempt: int, budget: RetryBudget, *, timeouts: int = 0
) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None when `exc` is not worth retrying.
    `timeouts`: how many attempts so far timed out, this one included."""
    if isinstance(exc, httpx.HTTPStatusError):
        if exc.response.status_code not in RETRYABLE_STATUS:
            return None
        asked = _retry_after_seconds(exc.response)
        if asked is not None:
            return asked if asked <= budget.max_retry_after else None
    elif isinstance(exc, httpx.TimeoutException):
        if timeouts >= budget.timeout_attempts:
            return None
    elif not isinstance(exc, httpx.TransportError | UnreadableReply | IncompleteReply):
        return None
    backoff: float = min(budget.max_delay, budget.base_delay * 2.0 ** (attempt - 1))
    return backoff * random.uniform(0.8, 1.2)


def describe_failure(
    exc: BaseException,
    *,
    deadline: float | None = None,
    silence: float | None = None,
    retrying: bool = False,
    patience: float | None = None,
) -> str:
    """One line for the customer-facing error: what failed, never a stack trace or a key.
    `deadline` and `silence`: the limits of `RetryBudget` a timeout ran into. `retrying`:
    only what failed, without what to do about it ("try again later" read oddly beside
    "Retrying in 0.5s": ShopBot is the one trying again). `patience`: the longest
    Retry-After ShopBot waits for, said when the provider asked for more."""
    what, advice = _failure_parts(exc, deadline, silence)
    if retrying:
        return f"{what}."
    if (wait := _asked_wait(exc)) is not None:
        # The provider said when: "try again in a moment" after it asked for an hour would
        # send the person straight back into the same refusal.
        if patience is not None and wait > patience:
            what += f" and asks to wait {_duration(wait)}, longer than ShopBot waits "
            what += f"({_duration(patience)})"
        advice = f"try again in {_duration(wait)}"
    return f"{what}; {advice}." if advice else f"{what}."


def _asked_wait(exc: BaseException) -> float | None:
    """The Retry-After of a failed HTTP answer, when it asks for a second or more."""
    if not isinstance(exc, httpx.HTTPStatusError):
        return None
    wait = _retry_after_seconds(exc.response)
    return wait if wait is not None and wait >= 1 else None


def _duration(seconds: float) -> str:
    """`seconds` as a person reads a wait, rounded up: 45 s, 60 min, 26 h, 3 days."""
    for unit, size in (("s", 1), ("min", 60), ("h", 3600)):
        if seconds <= 120 * size:
            return f"{math.ceil(seconds / size)} {unit}"
    return f"{math.ceil(seconds / 86400):,} days"


def _failure_parts(
    exc: BaseException, deadline: float | None, silence: float | None
) -> tuple[str, str]:
    """What failed, and what the person can do about it ("" when nothing)."""
    if isinstance(exc, TimeoutError):
        within = f" within {deadline:g} s" if deadline is not None else ""
        return f"The model provider did not finish its answer{within}", "try again later"
    if isinstance(exc, IncompleteReply):
        return "The model provider ended its answer before it was complete", "try again later"
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status in (401, 403):
            return (
                f"The model provider refused the API key (HTTP {status})",
                "check MISTRAL_API_KEY",
            )
        if status == 429:
            return "The model provider is rate limiting us (HTTP 429)", "try again in a moment"
        if status >= 500:
            return f"The model provider is unavailable (HTTP {status})", "try again later"
        return f"The model provider rejected the request (HTTP {status})", ""
    if isinstance(exc, UnreadableReply):
        return (
            "The model provider's answer could not be read (not a Mistral reply)",
            "check MISTRAL_BASE_URL",
        )
    if isinstance(exc, httpx.ConnectTimeout):
        within = f" within {silence:g} s" if silence is not None else ""
        return (
            f"The model provider cannot be reached (no connection{within})",
            "check the network or MISTRAL_BASE_URL",
        )
    if isinstance(exc, httpx.TimeoutException):
        if silence is None:
            return "The model provider did not answer in time", "try again later"
        return f"The model provider sent nothing for {silence:g} s", "try again later"
    if isinstance(exc, httpx.ConnectError | httpx.ProxyError | httpx.UnsupportedProtocol):
        return "The model provider cannot be reached", "check the network or MISTRAL_BASE_URL"
    if isinstance(exc, httpx.TransportError):
        # Reached, then cut off (a dropped stream, a reset): not a matter of the address.
        return (
            "The model provider closed the connection before its answer was complete",
            "try again later",
        )
    return f"The model call failed ({type(exc).__name__})", ""


def _is_provider_failure(exc: BaseException) -> bool:
    # TimeoutError: our own deadline on a whole answer (`RetryBudget.reply_deadline`).
    # UnreadableReply: it answered, with something that is not a reply; IncompleteReply: with
    # the start of one (see `agents.errors`).
    return isinstance(exc, httpx.HTTPError | TimeoutError | UnreadableReply | IncompleteReply)


async def _stream_reply(
    model: Runnable[Any, Any],
    messages: list[BaseMessage],
    on_text: Callable[[str], None],
) -> BaseMessage:
    """The model's reply streamed: text handed to `on_text` as it arrives, redacted (the
    word still arriving waits for the next space, or the end of the reply).

    Through `ainvoke` with a `TextSink`, not `astream`: our models then merge the chunks as
    they come instead of in one long call at the end (see `agents/models/streaming.py`).
    """
    # A key the model repeats never shows, not even for the moment it streams. A fresh
    # redactor per attempt: the word a failed attempt left unfinished is not shown.
    shield = StreamRedactor()

    def show(text: str) -> None:
        if safe := shield.feed(text):
            on_text(safe)

    # What arrives in one turn of the event loop is shown as one piece (see streaming.py).
    batch = TickBatch(show)
    sink = TextSink(batch.add)
    # Added to the node's callbacks (`ensure_config` reads them), not in their place: the
    # call stays a child of the graph's run, seen by whatever the graph is traced with.
    with_sink = merge_configs(ensure_config(), {"callbacks": [sink]})
    try:
        reply: BaseMessage = await model.ainvoke(messages, with_sink)
    except Exception:
        # What arrived before the failure is shown, as it came (a retry is said after it).
        with contextlib.suppress(Exception):
            batch.flush()
        raise
    finally:
        batch.cancel()  # (a cancelled call shows nothing more)
    batch.flush()
    if rest := shield.flush():
        on_text(rest)
    if not sink.delivered and (text := reply.text):
        on_text(redact(text))  # a model that cannot stream: its whole text at once
    return reply


async def call_model(
    model: Runnable[Any, Any],
    messages: Sequence[BaseMessage],
    runtime: Runtime[ShopContext],
    *,
    agent: str,
    on_text: Callable[[str], None] | None = None,
) -> Any:
    """`model.ainvoke(messages)` with bounded, Retry-After-aware retries of transient failures.

    Raises `ProviderUnavailable` (after a `provider_error` audit event) when the provider is
    down; anything else the model raises (a parsing error, a hand-off) propagates unchanged.
    With `on_text`, the reply is streamed and its text handed over as it arrives (after a
    retry the fronts are told, with `Retrying`, to drop what they had shown).
    """
    budget = turn(runtime.context).retry
    loop = asyncio.get_running_loop()
    # One deadline for the answer, from its first request: retries and their waits spend it
    # too (a fresh one per attempt let a trickling provider keep a person 124 s, not 120).
    deadline = loop.time() + budget.reply_deadline
    timeouts = 0
    for attempt in range(1, budget.attempts + 1):
        try:
            async with asyncio.timeout_at(deadline):
                if on_text is None:
                    return await model.ainvoke(list(messages))
                return await _stream_reply(model, list(messages), on_text)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            if not _is_provider_failure(exc):
                raise
            timeouts += isinstance(exc, httpx.TimeoutException)
            # Not retried after the deadline (nothing is left of it), nor when the wait
            # before the next attempt would outlast it: failing then says the same, later.
            delay = (
                retry_delay(exc, attempt, budget, timeouts=timeouts)
                if attempt < budget.attempts and not isinstance(exc, TimeoutError)
                else None
            )
            if delay is not None and loop.time() + delay >= deadline:
                delay = None
            if delay is None:
                message = describe_failure(
                    exc,
                    deadline=budget.reply_deadline,
                    silence=budget.silence_timeout,
                    patience=budget.max_retry_after,
                )
                report(
                    runtime,
                    kind="provider_error",
                    agent=agent,
                    detail={
                        "message": message,
                        # The type too: a timeout's own text is empty.
                        "error": redact(f"{type(exc).__name__}: {exc}")[:500],
                        "attempts": attempt,
                    },
                )
                raise ProviderUnavailable(message) from exc
            report(
                runtime,
                Retrying(
                    agent=agent,
                    attempt=attempt,
                    delay=round(delay, 2),
                    reason=describe_failure(exc, silence=budget.silence_timeout, retrying=True),
                ),
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable: the last attempt either returns or raises")
