"""The graph under `langgraph dev`, driven as a LangGraph user drives it: through
`langgraph-sdk`, with an operator's token, on the offline demo model."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from agents.graph.specialists.spec import RECURSION_LIMIT
from agents.names import AGENTS
from tests.serving.conftest import DANA_TOKEN, LEE_TOKEN
from tests.support import langgraph_dev

# One worker runs them all (`--dist loadgroup`): each worker that ran one would start a
# `langgraph dev` of its own for the session.
pytestmark = [pytest.mark.serving, pytest.mark.xdist_group("langgraph-dev")]

ALEX_REFUND = "I want a refund for ORD-001, the headphones broke after a week"
SAM_REFUND = "Please refund ORD-005, the speaker stopped charging after two days"
OVER_LIMIT_REFUND = "Refund ORD-004 please, the monitor has dead pixels"
JORDAN_REFUND = "I want my money back for ORD-006, several keys stopped working"


def _rows(served: langgraph_dev.Served, sql: str, *args: object) -> list[tuple[Any, ...]]:
    """What the server's ShopBot home holds (its one SQLite file), read as `shopbot` reads it."""
    path = served.home / "shopbot.sqlite"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute(sql, args).fetchall()


def _refunds(served: langgraph_dev.Served, order_id: str) -> list[tuple[Any, ...]]:
    return _rows(served, "SELECT reference FROM refunds WHERE order_id = ?", order_id)


def _decisions(served: langgraph_dev.Served, thread_id: str) -> list[dict[str, Any]]:
    rows = _rows(
        served,
        "SELECT detail FROM events WHERE kind = 'approval_decided' AND thread_id = ?",
        thread_id,
    )
    return [json.loads(detail) for (detail,) in rows]


def _ask(
    client: SyncLangGraphClient, assistant_id: str, message: str, customer: str
) -> tuple[str, dict[str, Any]]:
    """A new conversation whose first message asks for a refund: its thread and the question
    it waits on."""
    thread_id = str(client.threads.create()["thread_id"])
    client.runs.wait(
        thread_id,
        assistant_id,
        input={"messages": [{"role": "user", "content": message}]},
        context={"customer": customer},
    )
    return thread_id, _waiting(client, thread_id)


def _waiting(client: SyncLangGraphClient, thread_id: str) -> dict[str, Any]:
    state = client.threads.get_state(thread_id)
    values = [i["value"] for task in state["tasks"] for i in task["interrupts"]]
    assert len(values) == 1, state
    return dict(values[0])


def _refused(call: Any) -> httpx.Response:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response


def test_the_checkout_names_the_graph_and_its_auth() -> None:
    config = json.loads((langgraph_dev.REPO / "langgraph.json").read_text())
    assert config["graphs"] == {"shopbot": "./agents/serving/graph.py:shopbot"}
    assert config["auth"]["path"] == "./agents/serving/auth.py:auth"
    assert config["dependencies"] == ["."]


def test_schemas_answer(
    served: langgraph_dev.Served, client: SyncLangGraphClient, assistant_id: str
) -> None:
    headers = {"Authorization": f"Bearer {DANA_TOKEN}"}
    answer = httpx.get(f"{served.url}/assistants/{assistant_id}/schemas", headers=headers)
    assert answer.status_code == 200, answer.text
    context = answer.json()["context_schema"]
    assert set(context["properties"]) == {"customer"}


def test_the_drawn_graph_shows_the_specialists_and_their_hand_offs(
    served: langgraph_dev.Served, assistant_id: str
) -> None:
    headers = {"Authorization": f"Bearer {DANA_TOKEN}"}
    answer = httpx.get(
        f"{served.url}/assistants/{assistant_id}/graph",
        params={"xray": "true"},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    drawn = answer.json()
    nodes = {node["id"] for node in drawn["nodes"]}
    edges = {(edge["source"], edge["target"]) for edge in drawn["edges"]}
    for agent in AGENTS:
        assert f"{agent}:__start__" in nodes
        for other in AGENTS:
            if other != agent:
                assert (f"{agent}:__end__", f"{other}:__start__") in edges


def test_an_approved_refund_is_paid_once_and_names_the_operator(
    served: langgraph_dev.Served, client: SyncLangGraphClient, assistant_id: str
) -> None:
    thread_id, question = _ask(client, assistant_id, ALEX_REFUND, "Alex")
    # LangChain's human-in-the-loop request shape, beside ShopBot's own fields.
    assert question["kind"] == "refund_approval" and question["order_id"] == "ORD-001"
    (action,) = question["action_requests"]
    assert action["name"] == "process_refund" and action["args"]["order_id"] == "ORD-001"
    assert question["review_configs"][0]["action_name"] == "process_refund"
    assert _refunds(served, "ORD-001") == []

    # A client cannot say who decides: the operator its token names does.
    named = _refused(
        lambda: client.runs.wait(
            thread_id,
            assistant_id,
            command={"resume": "approve"},
            config={"configurable": {"shopbot_reviewer": "mallory"}},
        )
    )
    assert named.status_code == 422 and "operator" in named.json()["detail"]

    client.runs.wait(
        thread_id, assistant_id, command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert len(_refunds(served, "ORD-001")) == 1
    (decided,) = _decisions(served, thread_id)
    assert decided["decision"] == "approve" and decided["decided_by"] == "dana"
    assert decided["via"] == "server"
    assert client.threads.get_state(thread_id)["tasks"] == []
    # The run had ShopBot's brake, not the server's default of some 10,000 steps.
    runs = client.runs.list(thread_id)
    assert {run["kwargs"]["config"]["recursion_limit"] for run in runs} == {RECURSION_LIMIT}


def test_a_refund_over_the_limit_is_decided_only_by_an_operator_whose_limit_covers_it(
    served: langgraph_dev.Served, client: SyncLangGraphClient, assistant_id: str
) -> None:
    thread_id, question = _ask(client, assistant_id, OVER_LIMIT_REFUND, "Alex")
    assert question["order_id"] == "ORD-004" and question["needs_limit"] == "649.00"
    refused = _refused(
        lambda: client.runs.wait(thread_id, assistant_id, command={"resume": "approve"})
    )
    assert refused.status_code == 403 and "dana's limit is $500.00" in refused.json()["detail"]
    assert _waiting(client, thread_id)["request_id"] == question["request_id"]
    assert _refunds(served, "ORD-004") == [] and _decisions(served, thread_id) == []

    lee = get_sync_client(url=served.url, headers={"Authorization": f"Bearer {LEE_TOKEN}"})
    lee.runs.wait(thread_id, assistant_id, command={"resume": "approve"})
    assert len(_refunds(served, "ORD-004")) == 1
    (decided,) = _decisions(served, thread_id)
    assert (decided["decision"], decided["decided_by"]) == ("approve", "lee")


def test_a_rejected_refund_pays_nothing(
    served: langgraph_dev.Served, client: SyncLangGraphClient, assistant_id: str
) -> None:
    thread_id, question = _ask(client, assistant_id, SAM_REFUND, "Sam")
    assert question["order_id"] == "ORD-005"
    client.runs.wait(
        thread_id,
        assistant_id,
        command={"resume": {"decision": "reject", "request_id": question["request_id"]}},
    )
    assert _refunds(served, "ORD-005") == []
    (decided,) = _decisions(served, thread_id)
    assert decided["decision"] == "reject" and decided["decided_by"] == "dana"


def test_decisions_that_answer_nothing_waiting_are_refused(
    served: langgraph_dev.Served, client: SyncLangGraphClient, assistant_id: str
) -> None:
    fresh = str(client.threads.create()["thread_id"])
    nothing = _refused(lambda: client.runs.wait(fresh, assistant_id, command={"resume": "approve"}))
    assert nothing.status_code == 409
    assert "has no decision pending" in nothing.json()["detail"]
    assert client.runs.list(fresh) == []

    thread_id, question = _ask(client, assistant_id, JORDAN_REFUND, "Jordan")
    before = client.threads.get_state(thread_id)
    stale = _refused(
        lambda: client.runs.wait(
            thread_id,
            assistant_id,
            command={"resume": {"decision": "approve", "request_id": "0123456789ab"}},
        )
    )
    assert stale.status_code == 409
    assert "now waits for another decision" in stale.json()["detail"]
    unknown = _refused(
        lambda: client.runs.wait(thread_id, assistant_id, command={"resume": "perhaps"})
    )
    assert unknown.status_code == 422 and "is not an option" in unknown.json()["detail"]
    rewrite = _refused(
        lambda: client.runs.wait(
            thread_id, assistant_id, command={"resume": "approve", "update": {"awaiting": None}}
        )
    )
    assert rewrite.status_code == 422

    # A customer's message while the decision waits is refused, and the decision still waits.
    message = _refused(
        lambda: client.runs.wait(
            thread_id,
            assistant_id,
            input={"messages": [{"role": "user", "content": "hello? anyone there?"}]},
        )
    )
    assert message.status_code == 409
    assert "is waiting for a decision (refund approval" in message.json()["detail"]
    # Nor may a client write the conversation's state past the checks.
    written = _refused(lambda: client.threads.update_state(thread_id, {"awaiting": None}))
    assert written.status_code == 403

    after = client.threads.get_state(thread_id)
    assert after["checkpoint"] == before["checkpoint"]
    assert _waiting(client, thread_id)["request_id"] == question["request_id"]
    assert _refunds(served, "ORD-006") == [] and _decisions(served, thread_id) == []


def test_bad_messages_are_refused_with_the_runners_words(
    client: SyncLangGraphClient, assistant_id: str
) -> None:
    thread_id = str(client.threads.create()["thread_id"])
    for text, said in (("   ", "The message is empty"), ("x" * 16_001, "The message is too long")):
        refused = _refused(
            lambda text=text: client.runs.wait(
                thread_id, assistant_id, input={"messages": [{"role": "user", "content": text}]}
            )
        )
        assert refused.status_code == 422 and said in refused.json()["detail"]
    state = _refused(
        lambda: client.runs.wait(
            thread_id,
            assistant_id,
            input={"messages": [{"role": "user", "content": "hi"}], "awaiting": None},
        )
    )
    assert state.status_code == 422
    assert client.runs.list(thread_id) == []


def test_events_arrive_typed_on_the_wire(client: SyncLangGraphClient, assistant_id: str) -> None:
    thread_id = str(client.threads.create()["thread_id"])
    types: list[str] = []
    for part in client.runs.stream(
        thread_id,
        assistant_id,
        input={"messages": [{"role": "user", "content": "Where is my order ORD-002?"}]},
        context={"customer": "Sam"},
        stream_mode="custom",
        stream_subgraphs=True,
    ):
        if part.event.startswith("custom"):
            assert isinstance(part.data, dict) and "type" in part.data, part
            types.append(part.data["type"])
    assert {"step", "gate", "token", "reply"} <= set(types), types


def test_requests_without_an_operators_token_are_refused(
    served: langgraph_dev.Served, assistant_id: str
) -> None:
    path = f"{served.url}/assistants/{assistant_id}"
    assert httpx.get(path).status_code == 401
    assert (
        httpx.get(path, headers={"Authorization": "Bearer not-a-token-we-know"}).status_code == 403
    )
    # Studio's own scheme does not pass for an operator here.
    assert httpx.get(path, headers={"x-auth-scheme": "langsmith"}).status_code == 401
    assert httpx.get(path, headers={"Authorization": f"Bearer {DANA_TOKEN}"}).status_code == 200


def test_the_server_never_blocked_its_event_loop(served: langgraph_dev.Served) -> None:
    # (Last in the module: after the flows above. blockbuster raises BlockingError in a run.)
    log = served.log_tail(chars=2_000_000)
    assert "BlockingError" not in log and "Blocking call" not in log
    assert DANA_TOKEN not in log


def test_a_run_for_another_customer_is_refused_before_it_starts(
    client: SyncLangGraphClient, assistant_id: str
) -> None:
    thread_id = str(client.threads.create()["thread_id"])
    said = {"messages": [{"role": "user", "content": "Where is my order ORD-002?"}]}
    client.runs.wait(thread_id, assistant_id, input=said, context={"customer": "Sam"})
    before = client.threads.get_state(thread_id)["checkpoint"]["checkpoint_id"]
    other = {"messages": [{"role": "user", "content": "Where is my order ORD-001?"}]}
    refused = _refused(
        lambda: client.runs.wait(thread_id, assistant_id, input=other, context={"customer": "Alex"})
    )
    assert refused.status_code == 422
    assert "belongs to customer Sam" in refused.json()["detail"]
    assert client.threads.get_state(thread_id)["checkpoint"]["checkpoint_id"] == before
