"""The compiled graph, driven as a LangGraph server drives it: a plain message in, a plain
`Command(resume=...)` back, no in-process runner around it. What makes a turn safe holds all
the same: the transcript, the registry and the audit log are written by the graph, a message
while a decision waits is refused and the decision stays pending, an answer to another
request is refused, a LangChain HITL answer pays once, a failed provider closes the turn as
an error, a pasted key never reaches the transcript, and who decides is the authenticated
user, never a name the client sent."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agents.audit.log import AuditLog, AuditQuery
from agents.audit.writer import AuditWriter
from agents.graph import services as process
from agents.graph.context import ShopContext
from agents.graph.parent import build_graph
from agents.graph.services import SERVICES_KEY, Services, serve_with
from agents.models.offline.demo_model import OfflineDemoModel
from agents.safety.redaction import register_secret
from agents.store.home import checked_home
from agents.store.shop import ShopData
from agents.store.threads import ThreadRegistry
from tests.support.engine import FAST_RETRY
from tests.support.failing_models import FlakyDemoModel

REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"


@dataclass
class Bare:
    graph: Any
    services: Services
    threads: ThreadRegistry
    shop: ShopData
    audit: AuditLog
    writer: AuditWriter

    def config(self, thread: str, **configurable: Any) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread, SERVICES_KEY: self.services, **configurable}}

    async def run(
        self, thread: str, given: Any, customer: str | None = "Sam", **configurable: Any
    ) -> list[dict[str, Any]]:
        """The custom events the run streamed, as a server's client receives them."""
        wired = [
            data
            async for _ns, data in self.graph.astream(
                given,
                self.config(thread, **configurable),
                context=ShopContext(customer=customer),
                stream_mode="custom",
                subgraphs=True,
            )
        ]
        await self.writer.aflush()
        return wired

    async def waiting(self, thread: str) -> dict[str, Any] | None:
        state = await self.graph.aget_state({"configurable": {"thread_id": thread}})
        return dict(state.interrupts[0].value) if state.interrupts else None

    def kinds(self, thread: str) -> list[str]:
        events = self.audit.page(AuditQuery(thread_id=thread), limit=1000)
        return [event.kind for event in reversed(events)]


def message(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text)]}


def types(wired: list[dict[str, Any]]) -> list[str]:
    return [str(data.get("type")) for data in wired]


def open_bare(home: Path, model: Any = None) -> Bare:
    path = checked_home(home)
    threads, shop, audit = ThreadRegistry(path), ShopData(path), AuditLog(path)
    writer = AuditWriter(audit, threads=threads)
    services = Services(shop, writer, FAST_RETRY)
    graph = build_graph(model or OfflineDemoModel(), InMemorySaver())
    return Bare(graph, services, threads, shop, audit, writer)


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[Bare]:
    opened = open_bare(tmp_path)
    yield opened
    opened.writer.close()
    for store in (opened.audit, opened.shop, opened.threads):
        store.close()


async def test_a_plain_message_is_a_whole_turn_written_by_the_graph(bare: Bare) -> None:
    wired = await bare.run("g1", message("Where is my order ORD-002?"))
    assert "reply" in types(wired) and "token" in types(wired)
    info = bare.threads.get("g1")
    assert info is not None and info.customer == "Sam" and info.status == "idle"
    lines = bare.threads.lines("g1")
    assert (lines[0].role, lines[0].text) == ("customer", "Where is my order ORD-002?")
    assert lines[-1].role == "assistant" and "In Transit" in lines[-1].text
    kinds = bare.kinds("g1")
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished"
    assert "gate_passed" in kinds and "tool_called" in kinds


async def test_a_refund_waits_and_a_message_meanwhile_is_refused_not_dropped(bare: Bare) -> None:
    await bare.run("g2", message(REFUND))
    asked = await bare.waiting("g2")
    assert asked is not None and asked["kind"] == "refund_approval"
    assert asked["action_requests"][0]["name"] == "process_refund"  # LangChain's HITL shape
    info = bare.threads.get("g2")
    assert info is not None and info.status == "awaiting_approval"

    wired = await bare.run("g2", message("Hello? Any news?"))
    assert "message_refused" in types(wired)
    again = await bare.waiting("g2")
    assert again is not None and again["request_id"] == asked["request_id"]
    state = await bare.graph.aget_state({"configurable": {"thread_id": "g2"}})
    said = [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]
    assert "Hello? Any news?" not in said  # taken back out: never read as answered
    assert bare.shop.refunds() == []


async def test_an_answer_to_another_request_is_refused_and_the_decision_stays(
    bare: Bare,
) -> None:
    await bare.run("g3", message(REFUND))
    asked = await bare.waiting("g3")
    assert asked is not None
    wired = await bare.run("g3", Command(resume={"decision": "approve", "request_id": "0ld"}))
    assert "decision_refused" in types(wired)
    assert bare.shop.refunds() == []
    again = await bare.waiting("g3")
    assert again is not None and again["request_id"] == asked["request_id"]
    wired = await bare.run("g3", Command(resume="pay me twice"))
    assert "decision_refused" in types(wired) and bare.shop.refunds() == []


async def test_a_langchain_hitl_answer_pays_once_and_names_the_authenticated_user(
    bare: Bare,
) -> None:
    @dataclass
    class AuthUser:  # what a server's auth handler puts in the run's config
        identity: str

    await bare.run("g4", message(REFUND))
    wired = await bare.run(
        "g4",
        Command(resume={"decisions": [{"type": "approve"}]}),
        langgraph_auth_user=AuthUser("dana"),
        decided_by="mallory",  # a name the client sent: never who decided
    )
    assert "refund_paid" in types(wired) and "reply" in types(wired)
    assert [r.order_id for r in bare.shop.refunds()] == ["ORD-005"]
    assert await bare.waiting("g4") is None
    decided = [
        e for e in bare.audit.page(AuditQuery(thread_id="g4")) if e.kind == "approval_decided"
    ]
    assert [(e.detail["decision"], e.detail["decided_by"]) for e in decided] == [
        ("approve", "dana")
    ]
    info = bare.threads.get("g4")
    assert info is not None and info.status == "idle"
    assert bare.threads.lines("g4")[-1].role == "assistant"


async def test_a_hitl_rejection_with_a_message_pays_nothing(bare: Bare) -> None:
    await bare.run("g5", message(REFUND))
    wired = await bare.run(
        "g5", Command(resume={"decisions": [{"type": "reject", "message": "worn out"}]})
    )
    assert "decided" in types(wired) and "refund_paid" not in types(wired)
    assert bare.shop.refunds() == []
    assert await bare.waiting("g5") is None


async def test_a_provider_that_stays_down_closes_the_turn_as_an_error(tmp_path: Path) -> None:
    model = FlakyDemoModel()
    model.down = True
    opened = open_bare(tmp_path, model)
    try:
        wired = await opened.run("g6", message("Where is my order ORD-002?"))
        assert "failed" in types(wired)
        info = opened.threads.get("g6")
        assert info is not None and info.status == "error"
        assert opened.kinds("g6")[-1] == "turn_finished"
        # The thread carries on once the provider is back.
        model.down = False
        await opened.run("g6", message("Where is my order ORD-002?"))
        info = opened.threads.get("g6")
        assert info is not None and info.status == "idle"
    finally:
        opened.writer.close()
        for store in (opened.audit, opened.shop, opened.threads):
            store.close()


async def test_a_pasted_key_never_reaches_the_transcript_or_the_checkpoint(bare: Bare) -> None:
    key = "sk-graph-alone-9f8e7d6c5b4a"
    register_secret(key)
    await bare.run("g7", message(f"Where is ORD-002? my key is {key}"))
    assert all(key not in line.text for line in bare.threads.lines("g7"))
    state = await bare.graph.aget_state({"configurable": {"thread_id": "g7"}})
    assert all(key not in str(m.content) for m in state.values["messages"])


async def test_services_registered_for_the_process_serve_a_run_that_names_none(
    bare: Bare, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's runs carry no objects in their config: the graph module's factory opens
    the process's services, once."""
    monkeypatch.setattr(process, "_PROCESS", process._ProcessServices())
    opened: list[Services] = []

    def factory() -> Services:
        opened.append(bare.services)
        return bare.services

    serve_with(factory)
    for thread in ("s1", "s2"):
        await bare.graph.ainvoke(
            message("Where is my order ORD-002?"),
            {"configurable": {"thread_id": thread}},
            context=ShopContext(customer="Sam"),
        )
    await bare.writer.aflush()
    assert len(opened) == 1
    assert [bare.threads.get(t) is not None for t in ("s1", "s2")] == [True, True]


async def test_a_message_for_another_customer_is_refused_and_nothing_of_theirs_is_read(
    bare: Bare,
) -> None:
    """A conversation is its first customer's: a run naming another is refused by the graph
    (its message taken back out, nothing looked up), and the conversation carries on."""
    await bare.run("g8", message("Where is my order ORD-002?"), customer="Sam")
    before = bare.kinds("g8")
    wired = await bare.run("g8", message("Where is my order ORD-001?"), customer="Alex")
    refused = [data for data in wired if data.get("type") == "message_refused"]
    assert refused and "belongs to customer Sam" in refused[0]["message"]
    assert "reply" not in types(wired)
    new = bare.kinds("g8")[len(before) :]
    assert "tool_called" not in new and "message_refused" in new
    state = await bare.graph.aget_state({"configurable": {"thread_id": "g8"}})
    said = [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]
    assert said == ["Where is my order ORD-002?"] and state.values["customer"] == "Sam"
    wired = await bare.run("g8", message("Where is my order ORD-002?"), customer="sam")
    assert "reply" in types(wired)
