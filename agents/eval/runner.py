"""Plays the flows: each try is one conversation in a throwaway home of its own, driven through
the engine exactly as a front drives it (customer messages, the reviewer's
decisions), then read back from that home and checked. The result of each try is also put in
its home's audit log (`eval_result`); nothing is ever written to the user's own home."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, Literal

from langchain_core.language_models import BaseChatModel

from agents.backend.local import load_engine
from agents.errors import InputError
from agents.eval.checks import expectation_failures
from agents.eval.flow import Flow, Turn
from agents.eval.meter import UsageMeter, metered
from agents.eval.observed import Observed, TurnRecord
from agents.eval.results import FlowResult, SuiteResult, TryResult
from agents.eval.violations import safety_violations
from agents.events import ApprovalRequest, EngineEvent, outcome
from agents.reviewer import Reviewer
from agents.settings import Settings
from gates import normalise_order_id

if TYPE_CHECKING:
    from agents.runner.engine import ShopBotEngine

# Who decides in an eval: named so in the throwaway home's audit log.
SCRIPTED_REVIEWER = Reviewer("scripted reviewer", "shopbot eval")

# Makes the model of one try from that try's settings; None lets the engine make its own
# (the offline demo, or Mistral with a key). Tests seed defective models through it.
ModelFactory = Callable[[Settings], BaseChatModel | None]


class _Conversation:
    """One flow's script, played on one engine: its turns as they went."""

    def __init__(self, engine: ShopBotEngine, flow: Flow, thread_id: str) -> None:
        self.engine = engine
        self.flow = flow
        self.thread_id = thread_id
        self.records: list[TurnRecord] = []
        self.approved: list[str] = []
        self.stopped: str | None = None
        self.pending: ApprovalRequest | None = None

    async def play(self) -> None:
        for step, turn in enumerate(self.flow.turns, start=1):
            if not await self._step(step, turn):
                return

    async def _step(self, step: int, turn: Turn) -> bool:
        """Play one step; False when the script cannot go on."""
        events: AsyncIterator[EngineEvent]
        mismatch: str | None = None
        if turn.say is not None:
            said = turn.say
            events = self.engine.run_turn(self.thread_id, said, customer=self.flow.customer)
        else:
            decided = self._decision(step, turn)
            if decided is None:
                return False
            said, mismatch = decided
            events = self.engine.resume(self.thread_id, said, reviewer=SCRIPTED_REVIEWER)
        kind: Literal["say", "decide"] = "say" if turn.say is not None else "decide"
        started = time.perf_counter()
        try:
            result = await outcome(events)
        except InputError as exc:  # refused: nothing ran (a message while a decision waits)
            self.records.append(TurnRecord(step, kind, said, "refused", error=str(exc)))
            self.stopped = f"turn {step}: refused: {exc}"
            return False
        seconds = time.perf_counter() - started
        self.pending = result.pending
        order = result.pending.payload.get("order_id") if result.pending else None
        self.records.append(
            TurnRecord(
                step,
                kind,
                said,
                result.status,
                reply=result.reply,
                agent=result.active_agent,
                pending=result.pending.kind if result.pending else "none",
                pending_order=str(order) if order else None,
                seconds=seconds,
                error=result.error,
                failed=result.failed,
            )
        )
        if result.status == "error":
            self.stopped = f"turn {step}: the turn failed: {result.error or 'no reason given'}"
            return False
        if mismatch is not None:
            self.stopped = mismatch
            return False
        return True

    def _decision(self, step: int, turn: Turn) -> tuple[str, str | None] | None:
        """What the scripted reviewer answers, and why the try fails if it is not what the
        script says; None when there is nothing it can answer."""
        assert turn.decide is not None
        pending = self.pending
        if pending is None:
            self.stopped = (
                f"turn {step}: nothing waits for a decision (the script says {turn.decide})"
            )
            return None
        if turn.decide not in pending.options:
            what = pending.kind.replace("_", " ")
            self.stopped = (
                f"turn {step}: a {what} waits, and {turn.decide} is not one of its options"
            )
            return None
        order = normalise_order_id(pending.payload.get("order_id"))
        if turn.order and pending.kind == "refund_approval" and order != turn.order:
            # A careful person approves no refund of an order other than the one asked for.
            return "reject", (
                f"turn {step}: the reviewer was asked about a refund of {order or 'no order'}, "
                f"expected {turn.order}, and rejected it"
            )
        if turn.decide == "approve" and pending.kind == "refund_approval":
            self.approved.append(order)
        return turn.decide, None

    async def observe(self) -> Observed:
        """The conversation's end, read back from its home."""
        engine = self.engine
        lines = engine.transcript(self.thread_id)
        pending = await engine.pending_approval(self.thread_id)
        return Observed(
            customer=self.flow.customer,
            turns=tuple(self.records),
            stopped=self.stopped,
            customer_said=tuple(line.text for line in lines if line.role == "customer"),
            replies=tuple(line.text for line in lines if line.role == "assistant"),
            refunds=tuple(engine.shop.refunds()),
            # Oldest first; the whole home's, which holds this conversation only.
            events=tuple(reversed(list(engine.audit.iter_events()))),
            escalated=any(e.thread_id == self.thread_id for e in engine.escalations()),
            pending=pending.kind if pending else "none",
            agent=await engine.active_agent(self.thread_id),
            approved=tuple(self.approved),
            orders=tuple(engine.shop.all_orders()),
        )


async def run_try(
    flow: Flow, index: int, settings: Settings, *, model: BaseChatModel | None = None
) -> TryResult:
    """Try `flow` once, in the home `settings` name (a new, throwaway one)."""
    thread_id = f"{flow.name}-{index}"
    engine = load_engine()(settings, model=model)
    meter = UsageMeter()
    metered(engine.model, meter)
    async with engine:
        conversation = _Conversation(engine, flow, thread_id)
        await conversation.play()
        seen = await conversation.observe()
        result = TryResult(
            flow=flow.name,
            index=index,
            thread_id=thread_id,
            model=engine.model_label,
            failures=tuple(expectation_failures(flow, seen)),
            violations=tuple(safety_violations(seen)),
            turns=seen.turns,
            model_calls=meter.calls,
            input_tokens=meter.input_tokens,
            output_tokens=meter.output_tokens,
            refunds=tuple(sorted({r.order_id for r in seen.refunds})),
            escalated=seen.escalated,
            pending=seen.pending,
            agent=seen.agent,
            home=settings.home,
        )
        engine.audit.append(
            "eval_result", thread_id=thread_id, detail=result.audit_detail(engine.model_label)
        )
    return result


async def run_suite(
    flows: Sequence[Flow],
    *,
    k: int,
    settings: Settings,
    root: Path,
    model_for: ModelFactory | None = None,
    keep: bool = False,
    on_start: Callable[[Flow, int], object] | None = None,
    on_done: Callable[[TryResult], object] | None = None,
) -> SuiteResult:
    """Each flow `k` times, one after the other, each try in a new home under `root` (removed
    after its try unless `keep`). `settings` say which model; their home is never used."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    suite = SuiteResult(model=settings.model_label, k=k, kept_in=root if keep else None)
    for flow in flows:
        results = FlowResult(flow)
        suite.flows.append(results)
        for index in range(1, k + 1):
            if on_start is not None:
                on_start(flow, index)
            home = root / f"{flow.name}-{index}"
            tried = replace(settings, home=home)
            model = model_for(tried) if model_for is not None else None
            result = await run_try(flow, index, tried, model=model)
            suite.model = result.model  # (a factory's model names itself)
            if not keep:
                shutil.rmtree(home, ignore_errors=True)
                result = replace(result, home=None)
            results.tries.append(result)
            if on_done is not None:
                on_done(result)
    return suite


async def offline_calls(flows: Sequence[Flow]) -> dict[str, tuple[int, int]]:
    """Model calls and tokens of one try of each flow with the offline demo model: what a
    try costs with another model, about (it goes through the same graph; a model that gets
    corrected or retried takes more)."""
    with TemporaryDirectory(prefix="shopbot-eval-estimate-") as folder:
        settings = Settings(home=Path(folder), force_offline=True)
        suite = await run_suite(flows, k=1, settings=settings, root=Path(folder))
    return {
        flow.flow.name: (flow.tries[0].model_calls, flow.tries[0].tokens) for flow in suite.flows
    }
