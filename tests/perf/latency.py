"""Section: what a customer waits for the answer to start, order status, in the three
topologies (topologies.py), with a model whose first token comes 300 ms after each request.

The model is the calls section's scripted one (the same answers to the same questions),
waiting `FIRST_TOKEN_S` before the first chunk of every reply, streamed or not, and nothing
after it: so each model call a topology makes before the answer costs it 300 ms, as a hosted
model's time to first token does. The figure is measured, not computed: from sending the
message (`engine.run_turn`) to the first `TokenDelta` of the answer, each topology in
ShopBot's engine on its own home, rounds interleaved so the three share the machine's load.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult

from agents.events import TokenDelta, TurnFinished
from agents.models.streaming import wants_stream
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from tests.perf.calls import Responder, scenarios
from tests.perf.common import Progress, Row, spread, temp_home
from tests.perf.topologies import TOPOLOGIES, Topology, engine_for
from tests.support.scripted_model import ScriptedChatModel

SECTION = "latency"
FIRST_TOKEN_S = 0.3
VS_PREVIOUS_TARGET = 0.7
VS_SUPERVISOR_TARGET = 0.5
SCENARIO = "order_status"


class SlowFirstTokenModel(ScriptedChatModel):
    """The scripted model, its first token `first_token_s` after each request."""

    first_token_s: float = FIRST_TOKEN_S

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if not wants_stream(run_manager):
            # A reply not streamed arrives whole with its first token (`_astream` waits
            # for a streamed one).
            await asyncio.sleep(self.first_token_s)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        await asyncio.sleep(self.first_token_s)
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


async def first_token(
    topology: Topology, engine: ShopBotEngine, model: SlowFirstTokenModel, thread: str
) -> dict[str, float]:
    """One order-status turn on a new thread: seconds to the answer's first token, and to
    the turn's end."""
    scenario = next(s for s in scenarios() if s.name == SCENARIO)
    responder = Responder(scenario, topology)
    model.clear_script()
    model.script(*([responder] * 16))
    ((_, message),) = scenario.turns
    first: float | None = None
    start = end = time.perf_counter()
    async for event in engine.run_turn(thread, message, customer=scenario.customer):
        if first is None and isinstance(event, TokenDelta) and event.text:
            first = time.perf_counter()
        if isinstance(event, TurnFinished):
            end = time.perf_counter()
            if event.result.status != "done":
                raise AssertionError(f"{topology}: the turn ended {event.result.status}")
    if first is None:
        raise AssertionError(f"{topology}: the answer never streamed")
    # Up to the call that streams the answer: the agent's last answering call.
    to_answer = len(responder.asked) - responder.asked[::-1].index("answer:order_agent")
    return {
        "first_token_s": first - start,
        "turn_s": end - start,
        "calls": len(responder.asked),
        "calls_to_answer": to_answer,
    }


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    rounds = 1 if quick else 7
    runs: dict[Topology, list[dict[str, float]]] = {t: [] for t in TOPOLOGIES}
    async with AsyncExitStack() as stack:
        # One engine per topology, as a running ShopBot has: each round is a new conversation.
        engines: dict[Topology, tuple[ShopBotEngine, SlowFirstTokenModel]] = {}
        for topology in TOPOLOGIES:
            home = stack.enter_context(temp_home(f"latency-{topology}"))
            model = SlowFirstTokenModel()
            settings = Settings(home=home, force_offline=True)
            engine = await stack.enter_async_context(engine_for(topology, settings, model))
            engines[topology] = engine, model
        # A first round pays for lazy imports and first-use caches; not counted.
        for topology, (engine, model) in engines.items():
            await first_token(topology, engine, model, "warmup")
        for n in range(rounds):
            progress(f"latency: round {n + 1}/{rounds} (300 ms per model call)")
            for topology, (engine, model) in engines.items():
                runs[topology].append(await first_token(topology, engine, model, f"round-{n}"))
    stats = {t: spread([r["first_token_s"] for r in runs[t]]) for t in TOPOLOGIES}
    ttft = {t: stats[t]["median"] for t in TOPOLOGIES}
    waits = {t: runs[t][0]["calls_to_answer"] for t in TOPOLOGIES}

    def ours_over(other: Topology) -> str:
        paired = [
            o["first_token_s"] / r["first_token_s"]
            for o, r in zip(runs["ours"], runs[other], strict=True)
        ]
        return (
            f"{ttft['ours']:.3f} vs {ttft[other]:.3f} s; the model's part "
            f"{waits['ours']} vs {waits[other]} × {FIRST_TOKEN_S * 1000:.0f} ms; round by round "
            f"{min(paired):.3f}–{max(paired):.3f}×"
        )

    rows = [
        Row(
            SECTION,
            "latency.first_token",
            "time to the answer's first token, order status (ours)",
            ttft["ours"],
            "s",
            samples=rounds,
            note=(
                f"previous {ttft['previous']:.3f} s, supervisor {ttft['supervisor']:.3f} s; "
                f"{waits['ours']} / {waits['previous']} / {waits['supervisor']} model calls "
                f"before the answer streams, {FIRST_TOKEN_S * 1000:.0f} ms each; ours beyond "
                f"the model {(ttft['ours'] - waits['ours'] * FIRST_TOKEN_S) * 1000:.0f} ms"
            ),
            extra=stats,
        ),
        Row(
            SECTION,
            "latency.first_token_vs_previous",
            "time to first token: ours / previous",
            ttft["ours"] / ttft["previous"],
            "x",
            target=VS_PREVIOUS_TARGET,
            samples=rounds,
            note=ours_over("previous"),
        ),
        Row(
            SECTION,
            "latency.first_token_vs_supervisor",
            "time to first token: ours / supervisor",
            ttft["ours"] / ttft["supervisor"],
            "x",
            target=VS_SUPERVISOR_TARGET,
            samples=rounds,
            note=ours_over("supervisor"),
        ),
    ]
    return rows, {"runs": runs, "stats": stats}
