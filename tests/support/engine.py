"""Driving the engine in tests: build it on a temporary home, run turns, inspect what it did."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_mistralai.chat_models import _convert_message_to_mistral_chat_message

from agents.audit.log import AuditEvent, AuditQuery
from agents.events import EngineEvent, TokenDelta, TurnFinished, TurnResult
from agents.graph.context import RetryBudget
from agents.models.offline.demo_model import OfflineDemoModel
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from tests.support.fake_mistral import _check_conversation

# Retries in tests wait milliseconds, not seconds: the behaviour is the same.
FAST_RETRY = RetryBudget(attempts=4, base_delay=0.01, max_delay=0.05, max_retry_after=1.0)


@dataclass
class Turn:
    events: list[EngineEvent] = field(default_factory=list)

    @property
    def result(self) -> TurnResult:
        last = self.events[-1]
        assert isinstance(last, TurnFinished), f"stream did not end with TurnFinished: {last!r}"
        return last.result

    @property
    def streamed(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TokenDelta))

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


@asynccontextmanager
async def open_engine(
    home: Path,
    *,
    model: BaseChatModel | None = None,
    offline: bool = True,
    retry: RetryBudget = FAST_RETRY,
) -> AsyncIterator[ShopBotEngine]:
    settings = Settings.from_env(offline=offline, home=home)
    if offline and model is None:
        model = OfflineDemoModel()
    async with ShopBotEngine(settings, model=model, retry=retry) as engine:
        yield engine


async def say(engine: ShopBotEngine, thread: str, text: str, customer: str | None = None) -> Turn:
    turn = Turn()
    async for event in engine.run_turn(thread, text, customer=customer):
        turn.events.append(event)
    return turn


async def decide(engine: ShopBotEngine, thread: str, decision: str) -> Turn:
    turn = Turn()
    async for event in engine.resume(thread, decision):
        turn.events.append(event)
    return turn


def audit_of(engine: ShopBotEngine, thread: str) -> list[AuditEvent]:
    """The thread's audit events, oldest first."""
    return list(reversed(engine.audit.page(AuditQuery(thread_id=thread), limit=1000)))


def kinds(events: Sequence[AuditEvent]) -> list[str]:
    return [event.kind for event in events]


def tools_run(events: Sequence[AuditEvent]) -> list[tuple[str, dict[str, Any]]]:
    return [(e.detail["tool"], e.detail["args"]) for e in events if e.kind == "tool_called"]


async def history(engine: ShopBotEngine, thread: str) -> list[BaseMessage]:
    state = await engine.graph.aget_state({"configurable": {"thread_id": thread}})
    return list(state.values.get("messages", []))


def assert_mistral_valid(messages: Sequence[BaseMessage]) -> None:
    """The stored history, sent by ChatMistralAI with the customer's next message, passes the
    strict fake's rules."""
    wire = [_convert_message_to_mistral_chat_message(m) for m in [*messages, HumanMessage("ok")]]
    _check_conversation(wire)


def files_holding(home: Path, secret: str) -> list[Path]:
    """The files under `home` whose bytes hold `secret` (none may, for a key or password)."""
    return [p for p in home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
