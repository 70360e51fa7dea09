"""The server's run-creation handler (agents/serving/auth.py) on the run shapes two servers
hand it, without a server: langgraph-api's (the run's fields under `kwargs`) and Aegra's
(the request's own fields)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import Auth

from agents.graph.specialists.spec import RECURSION_LIMIT
from agents.serving import auth as served_auth

WAITING = {"kind": "refund_approval", "request_id": "a1b2c3d4e5f6", "options": ["approve"]}
MESSAGE = {"messages": [{"role": "user", "content": " Where is ORD-001?\x1b "}]}


def stands(monkeypatch: pytest.MonkeyPatch, known: bool, waiting: Any, busy: bool = False) -> None:
    async def read(thread_id: str) -> served_auth.ThreadNow:
        return served_auth.ThreadNow(known, waiting, busy)

    monkeypatch.setattr(served_auth, "_thread_now", read)


def langgraph_api_run(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("input", None)
    kwargs.setdefault("command", None)
    kwargs.setdefault("config", {"configurable": {}, "recursion_limit": 10011})
    return {"thread_id": "t1", "multitask_strategy": "reject", "kwargs": kwargs}


def aegra_run(**fields: Any) -> dict[str, Any]:
    run = dict.fromkeys(("input", "command", "config", "context", "checkpoint"))
    return {**run, "multitask_strategy": None, "thread_id": "t1", **fields}


async def refused(value: dict[str, Any]) -> int:
    with pytest.raises(Auth.exceptions.HTTPException) as caught:
        await served_auth.admit_run(None, value)  # type: ignore[arg-type]
    return caught.value.status_code


async def test_a_message_gets_shopbots_brake_and_is_cleaned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stands(monkeypatch, True, None)
    run = langgraph_api_run(input=MESSAGE)
    await served_auth.admit_run(None, run)  # type: ignore[arg-type]
    assert run["kwargs"]["config"]["recursion_limit"] == RECURSION_LIMIT
    assert run["kwargs"]["input"]["messages"][0]["content"] == "Where is ORD-001?␛"


async def test_aegras_run_shape_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    stands(monkeypatch, False, None)  # (no loopback API there: the state is not read)
    run = aegra_run(command={"resume": {"decisions": [{"type": "approve"}]}})
    await served_auth.admit_run(None, run)  # type: ignore[arg-type]
    assert run["config"]["recursion_limit"] == RECURSION_LIMIT
    assert await refused(aegra_run(command={"resume": {"decisions": [{"type": "edit"}]}})) == 422
    assert await refused(aegra_run(input={**MESSAGE, "awaiting": None})) == 422


async def test_runs_that_would_cut_a_turn_or_rewrite_it_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stands(monkeypatch, True, WAITING)
    assert await refused({**langgraph_api_run(input=MESSAGE), "multitask_strategy": "rollback"})
    assert await refused(langgraph_api_run(input=MESSAGE)) == 409
    assert await refused(langgraph_api_run(command={"resume": "approve"}, interrupt_before=["*"]))
    pinned = {"configurable": {"checkpoint_id": "1ef0"}}
    assert await refused(langgraph_api_run(command={"resume": "approve"}, config=pinned)) == 422
    assert (
        await refused(
            langgraph_api_run(
                command={"resume": "approve"}, context={"shopbot_reviewer": "mallory"}
            )
        )
        == 422
    )


async def test_a_decision_is_not_queued_behind_a_running_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queued = {**langgraph_api_run(command={"resume": "approve"}), "multitask_strategy": "enqueue"}
    stands(monkeypatch, True, WAITING, busy=True)
    assert await refused(queued) == 409
    stands(monkeypatch, True, WAITING, busy=False)  # (enqueue is the server's default)
    await served_auth.admit_run(None, queued)  # type: ignore[arg-type]
