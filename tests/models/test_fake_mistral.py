"""The fake Mistral server, exercised through the real ChatMistralAI client (and raw
httpx where the client would repair the request itself)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_mistralai import ChatMistralAI
from pydantic import BaseModel

from tests.support.fake_mistral import (
    FAKE_API_KEY,
    RATE_LIMIT_BODY,
    Answer,
    FakeMistralServer,
    ToolCallSpec,
    basic_auth,
    raw_tool_call,
    structured,
    text,
    tool_call,
    tool_calls,
)

MODEL = "mistral-small-latest"
ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
REPO_ROOT = Path(__file__).resolve().parents[2]


def make_llm(fake: FakeMistralServer, **kwargs: Any) -> ChatMistralAI:
    options: dict[str, Any] = {
        "model": MODEL,
        "base_url": fake.base_url,
        "api_key": FAKE_API_KEY,
        "max_retries": 0,
        "timeout": 10,
    }
    return ChatMistralAI(**{**options, **kwargs})


def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return order_id


def issue_refund(order_id: str, amount: float) -> str:
    """Refund part of an order."""
    return order_id


class RefundDecision(BaseModel):
    """Whether to refund, and how much."""

    approve: bool
    amount: float
    reason: str


def merge(chunks: Sequence[BaseMessage]) -> AIMessageChunk:
    merged: Any = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert isinstance(merged, AIMessageChunk)
    return merged


def assert_valid_id(call_id: str | None) -> None:
    assert call_id is not None
    assert len(call_id) == 9
    assert set(call_id) <= ID_CHARS


def post_raw(
    fake: FakeMistralServer, body: Any, *, token: str | None = FAKE_API_KEY, timeout: float = 5
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(fake.url, json=body, headers=headers, timeout=timeout, verify=False)


# --------------------------------------------------------------------------- happy paths


def test_invoke_through_env_set_by_fixture(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("Hello from the fake"))
    llm = ChatMistralAI(model=MODEL, max_retries=0)  # base URL and key come from the env

    msg = llm.invoke("hi")

    assert msg.content == "Hello from the fake"
    assert msg.response_metadata["finish_reason"] == "stop"
    assert msg.usage_metadata is not None
    assert msg.usage_metadata["input_tokens"] > 0
    assert msg.usage_metadata["output_tokens"] > 0
    assert fake_mistral.served == 1
    assert fake_mistral.rejections == []
    assert fake_mistral.remaining_script == 0
    req = fake_mistral.last_request
    assert req is not None
    assert (req.status, req.kind, req.reason, req.stream) == (200, "served", None, False)
    assert req.headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert req.messages == [{"role": "user", "content": "hi"}]
    assert req.body["model"] == MODEL


async def test_ainvoke(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("first"), text("second"))
    llm = make_llm(fake_mistral)

    first = await llm.ainvoke("one")
    second = await llm.ainvoke([SystemMessage("be brief"), HumanMessage("two")])

    assert (first.content, second.content) == ("first", "second")
    assert fake_mistral.served == 2
    assert fake_mistral.requests[1].messages[0] == {"role": "system", "content": "be brief"}
    assert fake_mistral.rejections == []


async def test_astream_yields_several_chunks(fake_mistral: FakeMistralServer) -> None:
    answer = "Your parcel left the warehouse this morning."
    fake_mistral.script(text(answer))
    llm = make_llm(fake_mistral)

    chunks = [chunk async for chunk in llm.astream("where is my parcel?")]

    pieces = [c.content for c in chunks if c.content]
    assert len(pieces) >= 5
    assert "".join(str(p) for p in pieces) == answer
    assert fake_mistral.last_request is not None
    assert fake_mistral.last_request.stream is True
    assert fake_mistral.served == 1
    assert fake_mistral.rejections == []


def test_stream_sync_concatenates_and_reports_usage(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("abcdefghijklmnopqrstuvwxyz"))
    llm = make_llm(fake_mistral)

    chunks = list(llm.stream("alphabet please"))
    merged = merge(chunks)

    assert merged.content == "abcdefghijklmnopqrstuvwxyz"
    assert merged.usage_metadata is not None
    assert merged.usage_metadata["output_tokens"] > 0
    assert merged.response_metadata["finish_reason"] == "stop"
    assert fake_mistral.rejections == []


def test_sse_wire_format(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("0123456789"))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": True}
    headers = {"Authorization": f"Bearer {FAKE_API_KEY}"}

    with httpx.stream(
        "POST", fake_mistral.url, json=body, headers=headers, timeout=5, verify=False
    ) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = [line for line in resp.iter_lines() if line]

    assert all(line.startswith("data: ") for line in events)
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [c["choices"][0]["delta"].get("content", "") for c in chunks[1:-1]]
    assert len(deltas) >= 3
    assert "".join(deltas) == "0123456789"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert set(chunks[-1]["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_non_stream_wire_format(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(tool_call("lookup_order", {"order_id": "ORD-001"}))
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Look up",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "tools": tools}

    data = post_raw(fake_mistral, body).json()

    assert data["object"] == "chat.completion"
    assert data["model"] == MODEL
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message["content"] == ""
    assert message["prefix"] is False
    (call,) = message["tool_calls"]
    assert_valid_id(call["id"])
    assert call["type"] == "function"
    assert call["index"] == 0
    assert json.loads(call["function"]["arguments"]) == {"order_id": "ORD-001"}
    usage = data["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_bind_tools_tool_call_is_parsed(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(tool_call("lookup_order", {"order_id": "ORD-002"}))
    llm = make_llm(fake_mistral).bind_tools([lookup_order, issue_refund])

    msg = llm.invoke("where is ORD-002?")

    assert msg.content == ""
    (call,) = msg.tool_calls
    assert call["name"] == "lookup_order"
    assert call["args"] == {"order_id": "ORD-002"}
    assert_valid_id(call["id"])
    sent = fake_mistral.last_request
    assert sent is not None
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["lookup_order", "issue_refund"]
    assert fake_mistral.rejections == []


async def test_astream_tool_call_arrives_whole(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(tool_call("issue_refund", {"order_id": "ORD-003", "amount": 12.5}))
    llm = make_llm(fake_mistral).bind_tools([lookup_order, issue_refund])

    chunks = [c async for c in llm.astream("refund me")]
    merged = merge(chunks)

    (call,) = merged.tool_calls
    assert call["name"] == "issue_refund"
    assert call["args"] == {"order_id": "ORD-003", "amount": 12.5}
    assert_valid_id(call["id"])
    assert merged.response_metadata["finish_reason"] == "tool_calls"
    assert fake_mistral.rejections == []


def test_parallel_tool_calls(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(
        tool_calls(
            [
                tool_call("lookup_order", {"order_id": "ORD-001"}),
                ("lookup_order", {"order_id": "ORD-002"}),
                ToolCallSpec(
                    "issue_refund", '{"order_id": "ORD-001", "amount": 1}', id="abcDEF123"
                ),
            ]
        )
    )
    msg = make_llm(fake_mistral).bind_tools([lookup_order, issue_refund]).invoke("all of it")

    assert [c["name"] for c in msg.tool_calls] == ["lookup_order", "lookup_order", "issue_refund"]
    assert [c["args"]["order_id"] for c in msg.tool_calls] == ["ORD-001", "ORD-002", "ORD-001"]
    ids = [c["id"] for c in msg.tool_calls]
    for call_id in ids:
        assert_valid_id(call_id)
    assert len(set(ids)) == 3
    assert ids[2] == "abcDEF123"


def test_malformed_arguments_become_invalid_tool_call(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(raw_tool_call("lookup_order", '{"order_id": "ORD-1"'))
    msg = make_llm(fake_mistral).bind_tools([lookup_order]).invoke("x")

    assert msg.tool_calls == []
    (bad,) = msg.invalid_tool_calls
    assert bad["name"] == "lookup_order"
    assert bad["args"] == '{"order_id": "ORD-1"'


def test_structured_output_sync(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(
        structured(RefundDecision, {"approve": True, "amount": 20.0, "reason": "late"})
    )
    llm = make_llm(fake_mistral).with_structured_output(RefundDecision)

    decision = llm.invoke("should we refund?")

    assert decision == RefundDecision(approve=True, amount=20.0, reason="late")
    sent = fake_mistral.last_request
    assert sent is not None
    assert sent.body["tool_choice"] == "any"
    assert sent.body["tools"][0]["function"]["name"] == "RefundDecision"
    assert fake_mistral.rejections == []


def test_structured_output_streaming(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(
        structured("RefundDecision", {"approve": False, "amount": 0, "reason": "no proof"})
    )
    llm = make_llm(fake_mistral).with_structured_output(RefundDecision)

    parsed = list(llm.stream("should we refund?"))

    assert parsed
    assert parsed[-1] == RefundDecision(approve=False, amount=0, reason="no proof")
    assert fake_mistral.last_request is not None
    assert fake_mistral.last_request.stream is True


async def test_structured_output_async(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(structured(RefundDecision, {"approve": True, "amount": 5, "reason": "x"}))
    llm = make_llm(fake_mistral).with_structured_output(RefundDecision)

    decision = await llm.ainvoke("refund?")

    assert decision == RefundDecision(approve=True, amount=5, reason="x")


def test_valid_tool_history_is_accepted(fake_mistral: FakeMistralServer) -> None:
    long_id = "call_0123456789abcdefghij"  # LangChain/OpenAI style; the client rewrites it
    history = [
        SystemMessage("You are ShopBot."),
        HumanMessage("Where is ORD-001?"),
        AIMessage(
            "",
            tool_calls=[{"name": "lookup_order", "args": {"order_id": "ORD-001"}, "id": long_id}],
        ),
        ToolMessage("Delivered", tool_call_id=long_id),
        AIMessage("It was delivered yesterday."),
        HumanMessage("Thanks! And ORD-002?"),
    ]
    fake_mistral.script(text("Let me check."))

    msg = make_llm(fake_mistral).bind_tools([lookup_order]).invoke(history)

    assert msg.content == "Let me check."
    assert fake_mistral.rejections == []
    sent = fake_mistral.last_request
    assert sent is not None
    assistant, tool = sent.messages[2], sent.messages[3]
    sent_id = assistant["tool_calls"][0]["id"]
    assert_valid_id(sent_id)
    assert sent_id != long_id
    assert tool["tool_call_id"] == sent_id
    assert assistant["content"] == ""
    assert tool["name"] is None  # ToolMessage.name unset -> JSON null, which the API accepts


def test_tool_result_then_model_answer_is_accepted(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(tool_call("lookup_order", {"order_id": "ORD-004"}), text("Shipped."))
    llm = make_llm(fake_mistral).bind_tools([lookup_order])
    history: list[Any] = [HumanMessage("ORD-004?")]

    first = llm.invoke(history)
    history += [first, ToolMessage("Shipped", tool_call_id=first.tool_calls[0]["id"])]
    second = llm.invoke(history)

    assert second.content == "Shipped."
    assert fake_mistral.rejections == []
    assert [m["role"] for m in fake_mistral.requests[1].messages] == ["user", "assistant", "tool"]


def test_assistant_prefix_as_last_message_is_accepted(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text(" world"))
    body = {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "say hello world"},
            {"role": "assistant", "content": "hello", "prefix": True},
        ],
    }

    resp = post_raw(fake_mistral, body)

    assert resp.status_code == 200
    assert resp.json()["choices"][0]["message"]["content"] == " world"
    assert fake_mistral.rejections == []


def test_content_chunk_lists_are_accepted(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("seen"))
    message = HumanMessage(
        content=[
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]
    )

    msg = make_llm(fake_mistral).invoke([SystemMessage([{"type": "text", "text": "s"}]), message])

    assert msg.content == "seen"
    assert fake_mistral.rejections == []


# --------------------------------------------------------------------------- rule violations

USER = {"role": "user", "content": "hi"}
SYSTEM = {"role": "system", "content": "be nice"}
ASSISTANT = {"role": "assistant", "content": "hello"}
TOOL_DEF = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look something up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def calls(*ids: str, content: str = "", arguments: str = "{}") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "lookup", "arguments": arguments}}
            for i in ids
        ],
    }


def answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "content": "result", "tool_call_id": call_id, "name": "lookup"}


ORDER = ("invalid_request_message_order", "3230")
FUNC = ("invalid_function_call", "3280")
GENERIC = ("invalid_request_error", None)

# (messages, extra request fields, (type, code), exact message)
BAD_CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], dict[str, Any], tuple[Any, Any], str]] = {
    "rule1-assistant-id-format": (
        [USER, calls("call_1234"), answer("call_1234")],
        {},
        FUNC,
        "Tool call id was call_1234 but must be a-z, A-Z, 0-9, with a length of 9.",
    ),
    "rule1-tool-message-id-format": (
        [USER, calls("abcdefghi"), answer("abc")],
        {},
        FUNC,
        "Tool call id was abc but must be a-z, A-Z, 0-9, with a length of 9.",
    ),
    "rule1-missing-call-id": (
        [
            USER,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "lookup", "arguments": "{}"}}],
            },
            answer("abcdefghi"),
        ],
        {},
        FUNC,
        "Tool call id has to be defined in serving mode.",
    ),
    "rule2-call-left-unanswered-before-assistant": (
        [USER, calls("aaaaaaaa1", "aaaaaaaa2"), answer("aaaaaaaa1"), ASSISTANT, USER],
        {},
        ORDER,
        "Not the same number of function calls and responses",
    ),
    "rule2-call-left-unanswered-at-end": (
        [USER, calls("aaaaaaaa1", "aaaaaaaa2"), answer("aaaaaaaa1")],
        {},
        ORDER,
        "Not the same number of function calls and responses",
    ),
    "rule2-call-never-answered-user-follows": (
        [USER, calls("aaaaaaaa1"), USER],
        {},
        ORDER,
        "Not the same number of function calls and responses",
    ),
    "rule2-answer-to-unknown-call": (
        [USER, calls("aaaaaaaa1"), answer("bbbbbbbb1")],
        {},
        ORDER,
        "Tool call id bbbbbbbb1 does not match any tool call of the preceding assistant message",
    ),
    "rule2-call-answered-twice": (
        [USER, calls("aaaaaaaa1", "aaaaaaaa2"), answer("aaaaaaaa1"), answer("aaaaaaaa1")],
        {},
        ORDER,
        "Tool call id aaaaaaaa1 was answered more than once",
    ),
    "rule2-tool-after-plain-assistant": (
        [USER, ASSISTANT, answer("aaaaaaaa1")],
        {},
        ORDER,
        "Not the same number of function calls and responses",
    ),
    "rule2-tool-after-user": (
        [USER, answer("aaaaaaaa1")],
        {},
        ORDER,
        "Unexpected role 'tool' after role 'user'",
    ),
    "rule3-user-after-tool": (
        [USER, calls("aaaaaaaa1"), answer("aaaaaaaa1"), USER],
        {},
        ORDER,
        "Unexpected role 'user' after role 'tool'",
    ),
    "rule4-system-after-assistant": (
        [SYSTEM, USER, ASSISTANT, SYSTEM, USER],
        {},
        ORDER,
        "Unexpected role 'system' after role 'assistant'",
    ),
    "rule4-system-after-tool": (
        [USER, calls("aaaaaaaa1"), answer("aaaaaaaa1"), SYSTEM],
        {},
        ORDER,
        "Unexpected role 'system' after role 'tool'",
    ),
    "rule5-last-message-assistant": (
        [USER, ASSISTANT],
        {},
        ORDER,
        "Expected last role User or Tool (or Assistant with prefix True) for serving "
        "but got assistant",
    ),
    "rule5-prefix-not-last": (
        [USER, {"role": "assistant", "content": "x", "prefix": True}, USER],
        {},
        GENERIC,
        "Assistant message with prefix True must be last message",
    ),
    "rule6-content-and-tool-calls": (
        [USER, calls("aaaaaaaa1", content="Let me look"), answer("aaaaaaaa1")],
        {},
        GENERIC,
        "Assistant message must have either content or tool_calls, but not both.",
    ),
    "rule6-neither-content-nor-tool-calls": (
        [USER, {"role": "assistant", "content": ""}, USER],
        {},
        GENERIC,
        "Assistant message must have either content or tool_calls, but not none.",
    ),
    "rule7-tool-message-without-id": (
        [USER, calls("aaaaaaaa1"), {"role": "tool", "content": "result"}],
        {},
        GENERIC,
        "Tool call id has to be defined.",
    ),
    "rule7-first-message-assistant": (
        [ASSISTANT, USER],
        {},
        ORDER,
        "Conversation must start with a user message or system message",
    ),
    "arguments-not-json": (
        [USER, calls("aaaaaaaa1", arguments='{"q": '), answer("aaaaaaaa1")],
        {},
        FUNC,
        "Tool call aaaaaaaa1 arguments are not valid JSON: Expecting value: "
        "line 1 column 7 (char 6)",
    ),
    "tool-choice-any-without-tools": (
        [USER],
        {"tool_choice": "any"},
        GENERIC,
        "tool_choice 'any' requires at least one tool in 'tools'",
    ),
    "tool-choice-names-unknown-tool": (
        [USER],
        {"tools": [TOOL_DEF], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
        GENERIC,
        "tool_choice names function 'nope' which is not among the provided tools",
    ),
    "duplicate-tool-names": (
        [USER],
        {"tools": [TOOL_DEF, TOOL_DEF]},
        GENERIC,
        "Duplicate tool name: 'lookup'",
    ),
    "bad-tool-name": (
        [USER],
        {"tools": [{"type": "function", "function": {"name": "look up", "parameters": {}}}]},
        GENERIC,
        "Function name was look up but must be a-z, A-Z, 0-9, or contain underscores and "
        "dashes, with a maximum length of 64.",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CONVERSATIONS), ids=list(BAD_CONVERSATIONS))
def test_conversation_rule_violations_get_400(fake_mistral: FakeMistralServer, case: str) -> None:
    messages, extra, (err_type, code), message = BAD_CONVERSATIONS[case]
    fake_mistral.script(text("must not be consumed"))

    resp = post_raw(fake_mistral, {"model": MODEL, "messages": messages, **extra})

    assert resp.status_code == 400
    assert resp.json() == {
        "object": "error",
        "message": message,
        "type": err_type,
        "param": None,
        "code": code,
    }
    (rejected,) = fake_mistral.rejections
    assert rejected.status == 400
    assert rejected.reason == message
    assert rejected.body["messages"] == messages
    assert fake_mistral.served == 0
    assert fake_mistral.remaining_script == 1
    fake_mistral.acknowledge_problems()


# (body, status, expected detail entries (subset of keys checked))
BAD_SCHEMAS: dict[str, tuple[Any, list[dict[str, Any]]]] = {
    "unknown-top-level-field": (
        {"model": MODEL, "messages": [USER], "max_completion_tokens": 10},
        [{"type": "extra_forbidden", "loc": ["body", "max_completion_tokens"], "input": 10}],
    ),
    "unknown-message-field": (
        {"model": MODEL, "messages": [{"role": "user", "content": "hi", "name": "Alex"}]},
        [{"type": "extra_forbidden", "loc": ["body", "messages", 0, "user", "name"]}],
    ),
    "tool-call-id-on-assistant-text-is-unknown": (
        {"model": MODEL, "messages": [USER, {**ASSISTANT, "tool_call_id": "x"}, USER]},
        [{"type": "extra_forbidden", "loc": ["body", "messages", 1, "assistant", "tool_call_id"]}],
    ),
    "missing-model": (
        {"messages": [USER]},
        [{"type": "missing", "loc": ["body", "model"], "msg": "Field required"}],
    ),
    "empty-messages": (
        {"model": MODEL, "messages": []},
        [{"type": "too_short", "loc": ["body", "messages"]}],
    ),
    "temperature-too-high": (
        {"model": MODEL, "messages": [USER], "temperature": 2.0},
        [{"type": "less_than_equal", "loc": ["body", "temperature"], "ctx": {"le": 1.5}}],
    ),
    "temperature-wrong-type": (
        {"model": MODEL, "messages": [USER], "temperature": "warm"},
        [{"type": "float_type", "loc": ["body", "temperature"]}],
    ),
    "unknown-role": (
        {"model": MODEL, "messages": [{"role": "developer", "content": "x"}]},
        [{"type": "union_tag_invalid", "loc": ["body", "messages", 0]}],
    ),
    "user-without-content": (
        {"model": MODEL, "messages": [{"role": "user"}]},
        [{"type": "missing", "loc": ["body", "messages", 0, "user", "content"]}],
    ),
    "unknown-content-chunk": (
        {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "audio"}]}]},
        [{"type": "union_tag_invalid", "loc": ["body", "messages", 0, "user", "content", 0]}],
    ),
    "text-chunk-extra-key": (
        {
            "model": MODEL,
            "messages": [{"role": "system", "content": [{"type": "text", "text": "a", "id": 1}]}],
        },
        [{"type": "extra_forbidden", "loc": ["body", "messages", 0, "system", "content", 0, "id"]}],
    ),
    "tool-without-parameters": (
        {"model": MODEL, "messages": [USER], "tools": [{"function": {"name": "f"}}]},
        [{"type": "missing", "loc": ["body", "tools", 0, "function", "parameters"]}],
    ),
    "tool-call-wrong-type": (
        {
            "model": MODEL,
            "messages": [
                USER,
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "abcdefghi",
                            "type": "fn",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                answer("abcdefghi"),
            ],
        },
        [
            {
                "type": "literal_error",
                "loc": ["body", "messages", 1, "assistant", "tool_calls", 0, "type"],
            }
        ],
    ),
    "bad-tool-choice": (
        {"model": MODEL, "messages": [USER], "tool_choice": "sometimes"},
        [{"type": "enum", "loc": ["body", "tool_choice"]}],
    ),
    "several-errors-reported-together": (
        {"model": 7, "messages": [USER], "foo": 1},
        [
            {"type": "extra_forbidden", "loc": ["body", "foo"]},
            {"type": "string_type", "loc": ["body", "model"]},
        ],
    ),
}


@pytest.mark.parametrize("case", list(BAD_SCHEMAS), ids=list(BAD_SCHEMAS))
def test_schema_violations_get_422(fake_mistral: FakeMistralServer, case: str) -> None:
    body, expected = BAD_SCHEMAS[case]
    fake_mistral.script(text("must not be consumed"))

    resp = post_raw(fake_mistral, body)

    assert resp.status_code == 422
    data = resp.json()
    assert set(data) == {"object", "message", "type", "param", "code"}
    assert (data["object"], data["type"], data["param"], data["code"]) == (
        "error",
        "invalid_request_error",
        None,
        None,
    )
    detail = data["message"]["detail"]
    assert len(detail) == len(expected)
    for got, want in zip(detail, expected, strict=True):
        assert {"type", "loc", "msg", "input"} <= set(got)
        assert {k: got.get(k) for k in want} == want
    (rejected,) = fake_mistral.rejections
    assert rejected.status == 422
    assert rejected.reason is not None
    assert expected[0]["type"] in rejected.reason
    assert fake_mistral.remaining_script == 1
    fake_mistral.acknowledge_problems()


def test_invalid_json_body_gets_422(fake_mistral: FakeMistralServer) -> None:
    resp = httpx.post(
        fake_mistral.url,
        verify=False,
        content=b'{"model": ',
        headers={"Authorization": f"Bearer {FAKE_API_KEY}", "Content-Type": "application/json"},
    )

    assert resp.status_code == 422
    assert resp.json()["message"]["detail"][0]["type"] == "json_invalid"
    assert len(fake_mistral.rejections) == 1
    fake_mistral.acknowledge_problems()


def test_chunked_request_body_is_read(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("chunked ok"), text("same connection"))
    headers = {"Authorization": f"Bearer {FAKE_API_KEY}"}

    def body() -> Any:
        yield b'{"model": "m", '
        yield b'"messages": [{"role": "user", "content": "hi"}]}'

    with httpx.Client(verify=False, timeout=5) as client:
        first = client.post(fake_mistral.url, content=body(), headers=headers)
        second = client.post(
            fake_mistral.url, json={"model": "m", "messages": [USER]}, headers=headers
        )

    assert first.json()["choices"][0]["message"]["content"] == "chunked ok"
    assert second.json()["choices"][0]["message"]["content"] == "same connection"
    assert fake_mistral.requests[0].headers["transfer-encoding"] == "chunked"
    assert fake_mistral.requests[0].messages == [USER]


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer None"],
    ids=["no-header", "no-token", "not-bearer", "literal-None"],
)
def test_missing_bearer_token_gets_401(
    fake_mistral: FakeMistralServer, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    body = {"model": MODEL, "messages": [USER]}

    resp = httpx.post(fake_mistral.url, json=body, headers=headers, timeout=5, verify=False)

    assert resp.status_code == 401
    data = resp.json()
    assert set(data) == {"message", "request_id"}
    assert data["message"] == "Unauthorized"
    assert len(fake_mistral.rejections) == 1
    assert fake_mistral.rejections[0].status == 401
    fake_mistral.acknowledge_problems()


def test_required_api_key_is_enforced() -> None:
    with FakeMistralServer(api_key=FAKE_API_KEY) as fake:
        fake.script(text("ok"))
        wrong = make_llm(fake, api_key="x" * 32)
        with pytest.raises(httpx.HTTPStatusError) as excinfo:
            wrong.invoke("hi")
        assert excinfo.value.response.status_code == 401
        assert make_llm(fake).invoke("hi").content == "ok"
        assert [r.status for r in fake.requests] == [401, 200]


def test_a_proxy_takes_only_its_own_basic_credentials() -> None:
    # MISTRAL_BASE_URL=http://user:password@host/v1: httpx sends Basic auth, not the key.
    with FakeMistralServer(proxy_credentials=("proxy", "s3cret-pw")) as fake:
        fake.script(text("ok"))
        for userinfo in ("", "proxy:wrong-pw@"):  # the bearer key alone; a wrong password
            refused = make_llm(fake, base_url=fake.base_url.replace("//", f"//{userinfo}"))
            with pytest.raises(httpx.HTTPStatusError) as excinfo:
                refused.invoke("hi")
            assert excinfo.value.response.status_code == 401
        proxied = make_llm(fake, base_url=fake.base_url.replace("//", "//proxy:s3cret-pw@"))
        assert proxied.invoke("hi").content == "ok"
        assert [r.status for r in fake.requests] == [401, 401, 200]
        assert fake.requests[-1].headers["authorization"] == basic_auth("proxy", "s3cret-pw")


def test_client_without_key_gets_401(
    fake_mistral: FakeMistralServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY")
    llm = ChatMistralAI(model=MODEL, max_retries=0)  # sends "Authorization: Bearer None"

    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        llm.invoke("hi")

    assert excinfo.value.response.status_code == 401
    fake_mistral.acknowledge_problems()


def test_wrong_base_url_gets_404(fake_mistral: FakeMistralServer) -> None:
    llm = make_llm(fake_mistral, base_url=f"http://127.0.0.1:{fake_mistral.port}")  # no /v1

    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        llm.invoke("hi")

    assert excinfo.value.response.status_code == 404
    (rejected,) = fake_mistral.rejections
    assert rejected.path == "/chat/completions"
    fake_mistral.acknowledge_problems()


# Things the real client happily sends and the real API refuses: the engine must not
# build these histories.
CLIENT_SIDE_VIOLATIONS: dict[str, tuple[list[Any], str]] = {
    "human-after-tool": (
        [
            HumanMessage("where is ORD-001?"),
            AIMessage("", tool_calls=[{"name": "lookup_order", "args": {}, "id": "abc"}]),
            ToolMessage("Delivered", tool_call_id="abc"),
            HumanMessage("and now?"),
        ],
        "Unexpected role 'user' after role 'tool'",
    ),
    "empty-ai-message": (
        [HumanMessage("hi"), AIMessage(""), HumanMessage("hello?")],
        "Assistant message must have either content or tool_calls, but not none.",
    ),
    "system-message-mid-conversation": (
        [HumanMessage("hi"), AIMessage("hello"), SystemMessage("new rules"), HumanMessage("ok")],
        "Unexpected role 'system' after role 'assistant'",
    ),
    "history-ending-with-ai-message": (
        [HumanMessage("hi"), AIMessage("hello")],
        "Expected last role User or Tool (or Assistant with prefix True) for serving "
        "but got assistant",
    ),
    "tool-call-without-result": (
        [
            HumanMessage("where is ORD-001?"),
            AIMessage("", tool_calls=[{"name": "lookup_order", "args": {}, "id": "abc"}]),
            HumanMessage("hurry up"),
        ],
        "Not the same number of function calls and responses",
    ),
    "replayed-malformed-tool-call": (
        [
            HumanMessage("where is ORD-001?"),
            AIMessage(
                "",
                invalid_tool_calls=[
                    {
                        "type": "invalid_tool_call",
                        "name": "lookup_order",
                        "args": '{"order_id": ',
                        "id": "abcdefghi",
                        "error": None,
                    }
                ],
            ),
            ToolMessage("error: bad arguments", tool_call_id="abcdefghi"),
        ],
        "Tool call abcdefghi arguments are not valid JSON: Expecting value: line 1 column 14 "
        "(char 13)",
    ),
}


@pytest.mark.parametrize("case", list(CLIENT_SIDE_VIOLATIONS), ids=list(CLIENT_SIDE_VIOLATIONS))
async def test_client_built_bad_histories_are_rejected(
    fake_mistral: FakeMistralServer, case: str
) -> None:
    history, message = CLIENT_SIDE_VIOLATIONS[case]
    fake_mistral.script(text("must not be consumed"))
    llm = make_llm(fake_mistral).bind_tools([lookup_order])

    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        await llm.ainvoke(history)

    assert excinfo.value.response.status_code == 400
    assert excinfo.value.response.json()["message"] == message
    assert [r.reason for r in fake_mistral.rejections] == [message]
    assert fake_mistral.remaining_script == 1
    fake_mistral.acknowledge_problems()


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream", "astream"])
async def test_rate_limit_429_with_retry_after(fake_mistral: FakeMistralServer, mode: str) -> None:
    fake_mistral.fail_next(429, retry_after=2)
    fake_mistral.script(text("after the storm"))
    llm = make_llm(fake_mistral)

    async def call() -> str:
        if mode == "invoke":
            return str(llm.invoke("hi").content)
        if mode == "ainvoke":
            return str((await llm.ainvoke("hi")).content)
        if mode == "stream":
            return "".join(str(c.content) for c in llm.stream("hi"))
        return "".join([str(c.content) async for c in llm.astream("hi")])

    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        await call()

    response = excinfo.value.response
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "2"
    assert json.loads(response.read()) == RATE_LIMIT_BODY
    assert fake_mistral.remaining_script == 1  # the fault did not eat the answer
    assert await call() == "after the storm"
    assert [r.status for r in fake_mistral.requests] == [429, 200]
    assert [r.kind for r in fake_mistral.faults] == ["fault"]
    assert fake_mistral.rejections == []


def test_5xx_faults_repeat_then_recover(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.fail_next(503, times=2, retry_after=0.5)
    fake_mistral.fail_next(500)
    fake_mistral.fail_next(502, body="<html>bad gateway</html>")
    fake_mistral.script(text("finally"))
    llm = make_llm(fake_mistral)

    failures = []
    for _ in range(4):
        with pytest.raises(httpx.HTTPStatusError) as excinfo:
            llm.invoke("hi")
        failures.append(excinfo.value.response)

    assert [r.status_code for r in failures] == [503, 503, 500, 502]
    assert failures[0].headers["Retry-After"] == "0.5"
    assert failures[0].json()["object"] == "error"
    assert failures[2].json()["type"] == "internal_server_error"
    assert failures[3].text == "<html>bad gateway</html>"
    assert llm.invoke("hi").content == "finally"
    assert fake_mistral.served == 1


def test_invalid_request_is_rejected_even_when_a_fault_is_queued(
    fake_mistral: FakeMistralServer,
) -> None:
    fake_mistral.fail_next(429)

    resp = post_raw(fake_mistral, {"model": MODEL, "messages": [USER, ASSISTANT]})

    assert resp.status_code == 400
    assert len(fake_mistral.rejections) == 1
    assert post_raw(fake_mistral, {"model": MODEL, "messages": [USER]}).status_code == 429
    fake_mistral.acknowledge_problems()


def test_stop_then_start_keeps_port(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("before"), text("after"))
    llm = make_llm(fake_mistral)
    assert llm.invoke("hi").content == "before"  # leaves a pooled keep-alive connection
    port = fake_mistral.port

    fake_mistral.stop()
    assert not fake_mistral.running
    with pytest.raises(httpx.ConnectError):
        llm.invoke("hi")

    fake_mistral.start()
    assert fake_mistral.port == port
    assert llm.invoke("hi").content == "after"
    assert fake_mistral.served == 2


async def test_stop_then_start_async(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("before"), text("after"))
    llm = make_llm(fake_mistral)
    assert (await llm.ainvoke("hi")).content == "before"

    fake_mistral.stop()
    with pytest.raises(httpx.ConnectError):
        await llm.ainvoke("hi")
    with pytest.raises(httpx.ConnectError):
        _ = [c async for c in llm.astream("hi")]

    fake_mistral.start()
    assert (await llm.ainvoke("hi")).content == "after"


def test_disconnect_before_response(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.disconnect_next()
    fake_mistral.script(text("second try"))
    llm = make_llm(fake_mistral)

    with pytest.raises(httpx.RemoteProtocolError):
        llm.invoke("hi")

    assert llm.invoke("hi").content == "second try"
    assert [r.kind for r in fake_mistral.requests] == ["disconnected", "served"]


async def test_disconnect_mid_stream(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.disconnect_next(after_chunks=3)
    fake_mistral.script(text("a fairly long answer that gets cut"))
    llm = make_llm(fake_mistral)
    received: list[str] = []

    with pytest.raises(httpx.RemoteProtocolError):
        async for chunk in llm.astream("hi"):
            received.append(str(chunk.content))

    assert "".join(received) == "a fairly"
    assert fake_mistral.requests[0].kind == "disconnected"
    assert fake_mistral.remaining_script == 0


async def test_a_stream_that_ends_early_stops_cleanly_without_its_final_chunk(
    fake_mistral: FakeMistralServer,
) -> None:
    # A well-formed end of the HTTP body, so the client raises nothing: it just stops.
    fake_mistral.end_early_next(after_chunks=3)
    fake_mistral.script(text("a fairly long answer that gets cut"))
    chunks = [c async for c in make_llm(fake_mistral).astream("hi")]

    assert "".join(str(c.content) for c in chunks) == "a fairly"
    assert all("finish_reason" not in c.response_metadata for c in chunks)
    (record,) = fake_mistral.requests
    assert (record.kind, record.reason) == ("fault", "injected early end after 3 chunks")
    assert fake_mistral.remaining_script == 0


async def test_a_stream_that_ends_early_never_sends_its_final_chunk(
    fake_mistral: FakeMistralServer,
) -> None:
    fake_mistral.end_early_next(after_chunks=1000)
    fake_mistral.script(text("short"))
    chunks = [c async for c in make_llm(fake_mistral).astream("hi")]

    assert "".join(str(c.content) for c in chunks) == "short"
    assert all("finish_reason" not in c.response_metadata for c in chunks)


def test_a_body_that_ends_early_is_half_of_the_completion(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.end_early_next()
    fake_mistral.script(text("a whole answer"), text("a whole answer"))

    with pytest.raises(json.JSONDecodeError):
        make_llm(fake_mistral).invoke("hi")
    assert make_llm(fake_mistral).invoke("hi").content == "a whole answer"
    cut, whole = fake_mistral.requests
    assert cut.kind == "fault" and whole.kind == "served"
    whole_body = json.dumps(whole.response, ensure_ascii=False, separators=(",", ":"))
    assert cut.response.startswith('{"id":"') and abs(2 * len(cut.response) - len(whole_body)) <= 2


def test_an_invalid_request_is_rejected_even_when_an_early_end_or_a_hang_is_queued(
    fake_mistral: FakeMistralServer,
) -> None:
    fake_mistral.end_early_next()
    fake_mistral.hang_next()
    fake_mistral.script(text("whole"))

    bad = post_raw(fake_mistral, {"model": MODEL, "messages": [USER, ASSISTANT]})
    assert bad.status_code == 400  # at once: refused, not held nor cut
    assert post_raw(fake_mistral, {"model": MODEL, "messages": [USER]}).status_code == 200
    with pytest.raises(httpx.ReadTimeout):
        post_raw(fake_mistral, {"model": MODEL, "messages": [USER]}, timeout=0.3)
    assert [r.kind for r in fake_mistral.requests[:2]] == ["rejected", "fault"]
    fake_mistral.acknowledge_problems()


def test_a_held_request_gets_not_a_byte_until_its_client_hangs_up(
    fake_mistral: FakeMistralServer,
) -> None:
    fake_mistral.hang_next()
    fake_mistral.script(text("at last"))
    llm = make_llm(fake_mistral, timeout=1)
    started = time.monotonic()

    with pytest.raises(httpx.ReadTimeout):
        llm.invoke("hi")
    gave_up = time.monotonic()
    assert 1.0 <= gave_up - started < 2.0
    assert llm.invoke("hi").content == "at last"  # held requests consume no answer
    deadline = time.monotonic() + 5
    while len(fake_mistral.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    held = next(r for r in fake_mistral.requests if r.kind == "disconnected")
    assert held.reason is not None and held.reason.startswith("held; the client hung up after 1.")
    # Held from its arrival until the client gave up, then the answer went to the next one.
    # (Not `second - first >= 1.0`: the server stamps an arrival once its thread has read the
    # body, which under load came up to milliseconds after the client's timeout began.)
    first, second = fake_mistral.received_times()
    assert first < gave_up <= second


def test_latency_delays_answers() -> None:
    with FakeMistralServer(latency=0.2) as fake:
        fake.script(text("slow"))
        llm = make_llm(fake)
        started = time.monotonic()
        assert llm.invoke("hi").content == "slow"
        assert time.monotonic() - started >= 0.2


# --------------------------------------------------------------------------- script errors


def test_script_exhausted_is_a_loud_500(fake_mistral: FakeMistralServer) -> None:
    llm = make_llm(fake_mistral)

    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        llm.invoke("anyone there?")

    assert excinfo.value.response.status_code == 500
    assert "script exhausted" in excinfo.value.response.json()["message"]
    (error,) = fake_mistral.script_errors
    assert error.reason is not None
    assert "script exhausted" in error.reason
    assert "anyone there?" in error.reason
    assert fake_mistral.rejections == []
    assert fake_mistral.unacknowledged_problems() == [error]
    fake_mistral.acknowledge_problems()
    assert fake_mistral.unacknowledged_problems() == []


def test_tool_not_offered_is_a_script_error(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(
        tool_call("issue_refund", {"order_id": "ORD-1", "amount": 1}),
        tool_call("issue_refund", {"order_id": "ORD-1", "amount": 1}),
    )

    with pytest.raises(httpx.HTTPStatusError) as plain:
        make_llm(fake_mistral).invoke("refund")
    with pytest.raises(httpx.HTTPStatusError) as other_tools:
        make_llm(fake_mistral).bind_tools([lookup_order]).invoke("refund")

    assert plain.value.response.status_code == 500
    assert other_tools.value.response.status_code == 500
    reasons = [r.reason or "" for r in fake_mistral.script_errors]
    assert len(reasons) == 2
    assert "'issue_refund'" in reasons[0]
    assert "no tools" in reasons[0]
    assert "['lookup_order']" in reasons[1]
    fake_mistral.acknowledge_problems()


def test_text_when_a_tool_call_is_forced_is_a_script_error(
    fake_mistral: FakeMistralServer,
) -> None:
    fake_mistral.script(text("I refuse to use tools"))

    with pytest.raises(httpx.HTTPStatusError):
        make_llm(fake_mistral).with_structured_output(RefundDecision).invoke("decide")

    (error,) = fake_mistral.script_errors
    assert "forces a tool call" in (error.reason or "")
    fake_mistral.acknowledge_problems()


def test_respond_with_is_used_when_script_is_empty(fake_mistral: FakeMistralServer) -> None:
    seen: list[int] = []

    def responder(body: dict[str, Any]) -> Answer:
        seen.append(len(body["messages"]))
        last = body["messages"][-1]["content"]
        if "refund" in last:
            return tool_call("issue_refund", {"order_id": "ORD-9", "amount": 3})
        return text(f"you said {last}")

    fake_mistral.script(text("scripted first"))
    fake_mistral.respond_with(responder)
    llm = make_llm(fake_mistral).bind_tools([issue_refund])

    assert llm.invoke("hello").content == "scripted first"
    assert llm.invoke("hello").content == "you said hello"
    assert llm.invoke("a refund please").tool_calls[0]["args"]["order_id"] == "ORD-9"
    assert seen == [1, 1]  # the scripted answer took priority over the responder
    fake_mistral.respond_with(None)
    with pytest.raises(httpx.HTTPStatusError):
        llm.invoke("hello")
    fake_mistral.acknowledge_problems()


def test_responder_exception_is_a_script_error(fake_mistral: FakeMistralServer) -> None:
    def responder(body: dict[str, Any]) -> Answer:
        raise KeyError("oops")

    fake_mistral.respond_with(responder)

    with pytest.raises(httpx.HTTPStatusError):
        make_llm(fake_mistral).invoke("hi")

    (error,) = fake_mistral.script_errors
    assert "KeyError" in (error.reason or "")
    fake_mistral.acknowledge_problems()


def test_answer_builders_refuse_impossible_answers() -> None:
    with pytest.raises(ValueError, match="9 characters"):
        tool_call("lookup_order", {}, id="call_1")
    with pytest.raises(ValueError, match="not a valid Mistral function name"):
        tool_call("lookup order", {})
    with pytest.raises(ValueError, match="duplicate tool call ids"):
        tool_calls([tool_call("a", {}, id="abcdefghi"), tool_call("b", {}, id="abcdefghi")])
    with pytest.raises(TypeError):
        FakeMistralServer().script("just a string")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- observation


def test_reset_forgets_everything(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(text("a"), text("b"))
    fake_mistral.fail_next(500)
    fake_mistral.respond_with(lambda body: text("r"))
    assert post_raw(fake_mistral, {"model": MODEL, "messages": [USER]}).status_code == 500

    fake_mistral.reset()

    assert fake_mistral.requests == []
    assert fake_mistral.last_request is None
    assert fake_mistral.served == 0
    assert fake_mistral.remaining_script == 0
    resp = post_raw(fake_mistral, {"model": MODEL, "messages": [USER]})
    assert resp.status_code == 500  # no fault, no script, no responder left
    assert "script exhausted" in resp.json()["message"]
    fake_mistral.acknowledge_problems()


def test_concurrent_requests_each_get_one_answer(fake_mistral: FakeMistralServer) -> None:
    fake_mistral.script(*(text(f"answer {i}") for i in range(24)))
    llm = make_llm(fake_mistral)
    barrier = threading.Barrier(8)

    def ask(i: int) -> str:
        if i < 8:
            barrier.wait(timeout=5)
        return str(llm.invoke(f"question {i}").content)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, range(24)))

    assert sorted(answers) == sorted(f"answer {i}" for i in range(24))
    assert fake_mistral.served == 24
    assert len(fake_mistral.requests) == 24
    assert sorted(r.seq for r in fake_mistral.requests) == list(range(1, 25))


def test_fixture_fails_the_test_on_unacknowledged_problems(tmp_path: Path) -> None:
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(
        "import httpx\n"
        "from tests.support.fake_mistral import FAKE_API_KEY\n"
        "def test_swallows_a_400(fake_mistral):\n"
        "    body = {'model': 'm', 'messages': [{'role': 'assistant', 'content': 'x'}]}\n"
        "    headers = {'Authorization': 'Bearer ' + FAKE_API_KEY}\n"
        "    assert httpx.post(fake_mistral.url, json=body, headers=headers).status_code == 400\n"
        "def test_acknowledges(fake_mistral):\n"
        "    body = {'model': 'm', 'messages': [{'role': 'assistant', 'content': 'x'}]}\n"
        "    headers = {'Authorization': 'Bearer ' + FAKE_API_KEY}\n"
        "    assert httpx.post(fake_mistral.url, json=body, headers=headers).status_code == 400\n"
        "    fake_mistral.acknowledge_problems()\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(test_file),
            "-q",
            "-p",
            "tests.support.fixtures",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            str(tmp_path / "pytest.ini"),
        ],
        cwd=REPO_ROOT,
        env={
            "PYTHONPATH": str(REPO_ROOT),
            "PATH": "/usr/bin:/bin",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 passed, 1 error" in result.stdout
    assert "fake Mistral saw 1 unexpected problem(s)" in result.stdout
    assert "ERROR" in result.stdout
    assert "test_swallows_a_400" in result.stdout


def test_standalone_module_serves_echo() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_mistral", "--port", "0"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        base_url = banner.split("listening on ")[1].split()[0]
        assert base_url.startswith("http://127.0.0.1:")
        llm = ChatMistralAI(model=MODEL, base_url=base_url, api_key=FAKE_API_KEY, max_retries=0)
        assert llm.invoke("ping").content == "echo: ping"
        forced = llm.bind_tools([lookup_order], tool_choice="any").invoke("x")
        assert forced.tool_calls[0]["name"] == "lookup_order"
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
