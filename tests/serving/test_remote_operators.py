"""Two operators on one ShopBot server, each through the remote backend (what `shopbot
--server URL` uses): one queue of decisions, one decision per request, the authenticated
operator in the audit log, and nothing but the server's URL and a token on their machines."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents.audit.log import AuditQuery
from agents.backend.remote import RemoteBackend
from agents.errors import InputError, NothingPending, ServerUnreachable
from agents.events import RefundPaid, TokenDelta, TurnFinished, outcome
from agents.graph.replies import TURN_STOPPED_NOTE
from tests.serving.conftest import DANA_TOKEN, LEE_TOKEN
from tests.support import langgraph_dev
from tests.support.tcp_proxy import Relay

pytestmark = [pytest.mark.serving, pytest.mark.xdist_group("langgraph-dev-fronts")]

REFUND = "I want a refund for ORD-001, the headphones broke after a week"


async def operator(served: langgraph_dev.Served, token: str, home: Path) -> RemoteBackend:
    backend = RemoteBackend(served.url, token, home=home, via="app")
    await backend.start()
    return backend


@pytest.fixture
async def dana_and_lee(
    operators_served: langgraph_dev.Served, tmp_path: Path
) -> AsyncIterator[tuple[RemoteBackend, RemoteBackend]]:
    dana = await operator(operators_served, DANA_TOKEN, tmp_path / "dana")
    lee = await operator(operators_served, LEE_TOKEN, tmp_path / "lee")
    yield dana, lee
    await dana.close()
    await lee.close()


async def test_two_operators_share_the_queue_and_one_decision_is_taken(
    dana_and_lee: tuple[RemoteBackend, RemoteBackend],
) -> None:
    dana, lee = dana_and_lee
    assert (dana.reviewer.name, lee.reviewer.name) == ("dana", "lee")
    thread_id = dana.new_thread_id()
    asked = await outcome(dana.send(thread_id, REFUND, customer="Alex"))
    assert asked.status == "awaiting_approval" and asked.pending is not None
    request = asked.pending
    assert request.payload["order_id"] == "ORD-001"

    # The same queue on both machines, and the same question.
    for backend in (dana, lee):
        assert thread_id in [info.thread_id for info in await backend.waiting_for_decision()]
        waiting = await backend.pending_decision(thread_id)
        assert waiting is not None and waiting.request_id == request.request_id

    paid: list[RefundPaid] = []
    decided = await outcome(
        lee.decide(thread_id, "approve", request_id=request.request_id),
        lambda event: paid.append(event) if isinstance(event, RefundPaid) else None,
    )
    assert decided.status == "done" and len(paid) == 1
    assert await dana.pending_decision(thread_id) is None

    # dana's decision on the same request comes second: refused, naming who took it.
    with pytest.raises(NothingPending) as refused:
        await outcome(dana.decide(thread_id, "reject", request_id=request.request_id))
    assert "it was approved by lee (server)" in str(refused.value)
    (tried,) = await dana.audit_page(
        AuditQuery(thread_id=thread_id, kinds=("decision_refused",)), limit=5
    )
    assert (tried.detail["decided_by"], tried.detail["decision"]) == ("dana", "reject")
    assert "has no decision pending" in tried.detail["reason"]

    # The audit log names the operator the server authenticated, read from dana's machine.
    query = AuditQuery(thread_id=thread_id, kinds=("approval_decided", "refund_processed"))
    events = await dana.audit_page(query, limit=10)
    assert [(e.kind, e.detail["decided_by"], e.detail["via"]) for e in events] == [
        ("refund_processed", "lee", "server"),
        ("approval_decided", "lee", "server"),
    ]
    assert await dana.audit_count(query) == 2
    exported = io.StringIO()
    assert await dana.audit_export(AuditQuery(thread_id=thread_id), exported) >= 4
    kinds = [json.loads(line)["kind"] for line in exported.getvalue().splitlines()]
    assert kinds.count("approval_decided") == 1 and kinds.count("refund_processed") == 1
    assert thread_id in await dana.audit_thread_ids()

    # The transcript and the list, from the other machine.
    lines = [line.text for line in await dana.transcript(thread_id)]
    assert lines[0] == REFUND and "decision: approve, by lee (server)" in lines
    info = await dana.thread(thread_id)
    assert info is not None and info.customer == "Alex" and info.status == "idle"
    assert thread_id in [i.thread_id for i in await lee.threads(matching="headphones")]


async def test_a_refund_over_an_operators_limit_waits_for_one_whose_limit_covers_it(
    dana_and_lee: tuple[RemoteBackend, RemoteBackend],
) -> None:
    dana, lee = dana_and_lee
    thread_id = dana.new_thread_id()
    asked = await outcome(
        dana.send(thread_id, "Refund ORD-004 please, the monitor has dead pixels", customer="Alex")
    )
    assert asked.pending is not None
    # Each operator is told before deciding what the server will say.
    assert "dana's limit is $500.00" in (dana.may_not_decide(asked.pending) or "")
    lee_sees = await lee.pending_decision(thread_id)
    assert lee_sees is not None and lee.may_not_decide(lee_sees) is None
    with pytest.raises(InputError, match="dana's limit is"):
        await outcome(dana.decide(thread_id, "approve", request_id=asked.pending.request_id))
    refused = await dana.audit_page(
        AuditQuery(thread_id=thread_id, kinds=("decision_refused",)), limit=5
    )
    assert [(e.detail["decided_by"], e.detail["via"], e.detail["decision"]) for e in refused] == [
        ("dana", "server", "approve")
    ]
    done = await outcome(lee.decide(thread_id, "reject", request_id=lee_sees.request_id))
    assert done.status == "done"


async def test_drafts_stay_on_the_operators_machine(
    dana_and_lee: tuple[RemoteBackend, RemoteBackend], tmp_path: Path
) -> None:
    dana, lee = dana_and_lee
    thread_id = dana.new_thread_id()
    await dana.save_draft(thread_id, "half a sentence")
    await dana.save_draft(None, "a new one")
    assert await dana.draft(thread_id) == "half a sentence"
    assert await dana.drafted_threads() == {thread_id}
    assert await lee.draft(thread_id) == "" and await lee.drafted_threads() == set()
    assert (tmp_path / "dana" / "server-drafts.json").is_file()
    # The operator's token pasted into the box is not kept.
    await dana.save_draft(thread_id, f"my token is {DANA_TOKEN}")
    assert DANA_TOKEN not in (tmp_path / "dana" / "server-drafts.json").read_text()
    await dana.save_draft(thread_id, "")
    assert await dana.drafted_threads() == set()


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's tries, without their pauses."""
    from agents.backend import remote

    monkeypatch.setattr(remote, "READ_RETRIES", (0.0, 0.0, 0.0))


async def test_a_dropped_connection_is_said_and_sends_nothing(
    operators_served: langgraph_dev.Served, tmp_path: Path, quick_retries: None
) -> None:
    host, port = operators_served.url.removeprefix("http://").split(":")
    relay = Relay(host, int(port))
    await relay.open()
    backend = RemoteBackend(relay.url, DANA_TOKEN, home=tmp_path, via="app")
    await backend.start()
    try:
        thread_id = backend.new_thread_id()
        await relay.cut()
        with pytest.raises(ServerUnreachable, match=f"server at {relay.url} cannot be reached"):
            await outcome(backend.send(thread_id, "Where is my order ORD-002?", customer="Sam"))
        # Back: the same message goes through, once.
        await relay.open()
        done = await outcome(backend.send(thread_id, "Where is my order ORD-002?", customer="Sam"))
        assert "ORD-002" in done.reply
        said = [line.text for line in await backend.transcript(thread_id)]
        assert said.count("Where is my order ORD-002?") == 1
    finally:
        await relay.cut()
        await backend.close()


async def test_a_server_that_cannot_be_reached_is_named_at_start(
    tmp_path: Path, quick_retries: None
) -> None:
    relay = Relay("127.0.0.1", 9)  # (never opened: nothing listens on its port)
    backend = RemoteBackend(relay.url, DANA_TOKEN, home=tmp_path, via="app")
    try:
        with pytest.raises(ServerUnreachable) as failed:
            await backend.start()
        assert str(failed.value).startswith(f"The ShopBot server at {relay.url} cannot be reached")
        assert DANA_TOKEN not in str(failed.value)
    finally:
        await backend.close()


async def test_a_wrong_token_is_refused_in_one_line(
    operators_served: langgraph_dev.Served, tmp_path: Path
) -> None:
    backend = RemoteBackend(operators_served.url, "not-a-token-we-know", home=tmp_path, via="app")
    try:
        with pytest.raises(
            InputError, match="refused this operator: This operator token is unknown"
        ):
            await backend.start()
    finally:
        await backend.close()


async def test_a_thread_id_that_is_not_a_servers_is_refused(
    dana_and_lee: tuple[RemoteBackend, RemoteBackend],
) -> None:
    dana, _ = dana_and_lee
    with pytest.raises(InputError, match="names its conversations by UUID"):
        await outcome(dana.send("t-1", "hello"))
    assert await dana.thread("t-1") is None


async def test_reads_are_tried_again_while_the_server_is_away(
    operators_served: langgraph_dev.Served,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    quick_retries: None,
) -> None:
    host, port = operators_served.url.removeprefix("http://").split(":")
    relay = Relay(host, int(port))
    backend = RemoteBackend(relay.url, DANA_TOKEN, home=tmp_path, via="app")
    tries = 0
    original = backend._client.http.get

    async def counting(*args: object, **kwargs: object) -> object:
        nonlocal tries
        tries += 1
        if tries == 3:
            await relay.open()  # back after two failures
        return await original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(backend._client.http, "get", counting)
    try:
        assert await backend.count_threads() >= 0
        assert tries == 3
    finally:
        await relay.cut()
        await backend.close()


async def test_a_reply_stopped_from_a_remote_front_is_stopped_on_the_server(
    dana_and_lee: tuple[RemoteBackend, RemoteBackend],
) -> None:
    dana, _ = dana_and_lee
    thread_id = dana.new_thread_id()
    stream = dana.send(thread_id, "Where is my order ORD-002?", customer="Sam")
    seen: list[object] = []

    async def read() -> None:
        async for event in stream:
            seen.append(event)
            if isinstance(event, TokenDelta):
                assert dana.stop_reply(thread_id)  # (what esc does: the reading task stops)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(read())
    assert not any(isinstance(event, TurnFinished) for event in seen)
    await dana.close_pending_stops()
    lines = [line.text for line in await dana.transcript(thread_id)]
    assert lines[-1] == TURN_STOPPED_NOTE, lines
    stopped = await dana.audit_page(
        AuditQuery(thread_id=thread_id, kinds=("turn_finished",)), limit=1
    )
    assert stopped[0].detail == {"status": "stopped", "stopped_by": "dana", "via": "server"}
    # The conversation carries on.
    again = await outcome(dana.send(thread_id, "Where is my order ORD-002?", customer="Sam"))
    assert "ORD-002" in again.reply and again.status == "done"
