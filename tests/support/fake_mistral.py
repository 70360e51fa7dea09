"""A strict fake of Mistral's chat-completions HTTP API, for tests and benchmarks.

The real ``langchain_mistralai.ChatMistralAI`` client talks to it over HTTP on 127.0.0.1,
so everything the client puts on the wire is checked the way the real API checks it:
unknown fields and wrong types are refused with a 422 in FastAPI/pydantic's shape, and
the conversation rules the real API enforces (9-character tool-call ids, every tool call
answered exactly once before anything else, no ``user`` straight after ``tool``, ``system``
only at the start, ...) are refused with a 400 in Mistral's shape. Every refusal is
recorded, so a test can assert that the engine under test never sends a bad request.

Standard library only. Typical use (the ``fake_mistral`` pytest fixture in
``tests/support/fixtures.py`` does the start/stop and env-var part for you)::

    from tests.support.fake_mistral import FakeMistralServer, structured, text, tool_call

    with FakeMistralServer() as fake:  # started on a free port, stopped on exit
        fake.script(
            tool_call("lookup_order", {"order_id": "ORD-001"}),
            text("Your order has shipped."),
        )
        llm = ChatMistralAI(base_url=fake.base_url, api_key="x" * 32, max_retries=0)
        ...
        assert fake.rejections == []
        assert fake.served == 2

Answers are consumed in order from the script; when the script is empty, a responder
installed with ``respond_with(fn)`` is asked; when neither gives an answer the request
gets a 500 ("script exhausted") and is recorded as a script error, so the test fails
loudly. A scripted answer that a real model could not give (calling a tool that was not
offered, answering with text while ``tool_choice`` forces a tool call, ...) is a script
error too.

Run standalone with a tiny echo responder::

    python -m tests.support.fake_mistral --port 8765
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.server
import itertools
import json
import math
import random
import re
import select
import socket
import string
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final, Literal, Self, TypeAlias, cast

__all__ = [
    "CHAT_COMPLETIONS_PATH",
    "FAKE_API_KEY",
    "Answer",
    "FakeMistralServer",
    "RecordedRequest",
    "RequestKind",
    "Responder",
    "ToolCallSpec",
    "basic_auth",
    "echo_responder",
    "new_tool_call_id",
    "raw_tool_call",
    "structured",
    "text",
    "tool_call",
    "tool_calls",
]

CHAT_COMPLETIONS_PATH: Final = "/v1/chat/completions"
FAKE_API_KEY: Final = "fakeMistralKey" + "0" * 18
"""A syntactically plausible 32-character API key for tests."""

TOOL_CALL_ID_RE: Final = re.compile(r"^[a-zA-Z0-9]{9}$")
FUNCTION_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ID_ALPHABET: Final = string.ascii_letters + string.digits

# (type, code) of the real API's 400 error bodies, as seen in public reports of real
# responses: message-order problems are "invalid_request_message_order"/"3230", malformed
# tool-call ids "invalid_function_call"/"3280"; the assistant content-vs-tool_calls and
# tool_call_id-missing messages have been reported as "invalid_request_error"/null. The
# message texts are the real validator's (mistral-common) where one exists.
_ORDER_ERROR: Final = ("invalid_request_message_order", "3230")
_FUNCTION_CALL_ERROR: Final = ("invalid_function_call", "3280")
_GENERIC_ERROR: Final[tuple[str, str | None]] = ("invalid_request_error", None)

RATE_LIMIT_BODY: Final[Mapping[str, Any]] = {
    "object": "error",
    "message": "Requests rate limit exceeded",
    "type": "rate_limited",
    "param": None,
    "code": "1300",
}


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call the fake model will emit.

    ``arguments`` is the raw text the model produces (normally a JSON object, but
    ``raw_tool_call`` can put anything there). ``id`` None means "generate a valid
    9-character id when answering".
    """

    name: str
    arguments: str
    id: str | None = None

    def __post_init__(self) -> None:
        if not FUNCTION_NAME_RE.match(self.name):
            msg = f"tool name {self.name!r} is not a valid Mistral function name"
            raise ValueError(msg)
        if self.id is not None and not TOOL_CALL_ID_RE.match(self.id):
            msg = f"tool call id {self.id!r} must be exactly 9 characters of [a-zA-Z0-9]"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class Answer:
    """What the fake model answers to one request: text, tool calls, or both.

    Build it with :func:`text`, :func:`tool_call`, :func:`tool_calls`,
    :func:`raw_tool_call` or :func:`structured` rather than directly.
    """

    content: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    finish_reason: str | None = None
    """None means "stop" for text and "tool_calls" when there are tool calls."""
    ignores_parallel_false: bool = False
    """Several calls even though the request sent ``parallel_tool_calls: false``: models
    do this now and then, and the engine must cope (design.md, langgraph issue 7129)."""

    def __post_init__(self) -> None:
        ids = [c.id for c in self.tool_calls if c.id is not None]
        if len(ids) != len(set(ids)):
            msg = f"duplicate tool call ids in one answer: {ids}"
            raise ValueError(msg)

    @property
    def effective_finish_reason(self) -> str:
        """The ``finish_reason`` sent on the wire."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


Responder: TypeAlias = Callable[[dict[str, Any]], Answer | None]
"""``fn(request_body) -> Answer | None``; None means "no answer" (script exhausted)."""


def text(content: str, *, finish_reason: str = "stop") -> Answer:
    """A plain text answer."""
    return Answer(content=content, finish_reason=finish_reason)


def _call_spec(name: str, args: Mapping[str, Any] | None, call_id: str | None) -> ToolCallSpec:
    arguments = json.dumps(dict(args or {}), ensure_ascii=False)
    return ToolCallSpec(name=name, arguments=arguments, id=call_id)


def tool_call(name: str, args: Mapping[str, Any] | None = None, id: str | None = None) -> Answer:
    """An answer made of one call of tool ``name`` with JSON-serialisable ``args``."""
    return Answer(tool_calls=(_call_spec(name, args, id),))


def tool_calls(
    calls: Iterable[Answer | ToolCallSpec | tuple[str, Mapping[str, Any]]],
    *,
    ignores_parallel_false: bool = False,
) -> Answer:
    """Several tool calls in one assistant message (parallel tool calling).

    Each item is a ``tool_call(...)``/``raw_tool_call(...)`` answer, a
    :class:`ToolCallSpec`, or a ``(name, args)`` pair. ``ignores_parallel_false`` plays a
    model that sends them even when the request asked for one call at a time.
    """
    specs: list[ToolCallSpec] = []
    for item in calls:
        if isinstance(item, Answer):
            if item.content or len(item.tool_calls) != 1:
                msg = "tool_calls() takes single-call answers built by tool_call()/raw_tool_call()"
                raise ValueError(msg)
            specs.append(item.tool_calls[0])
        elif isinstance(item, ToolCallSpec):
            specs.append(item)
        else:
            name, args = item
            specs.append(_call_spec(name, args, None))
    if not specs:
        msg = "tool_calls() needs at least one call"
        raise ValueError(msg)
    return Answer(tool_calls=tuple(specs), ignores_parallel_false=ignores_parallel_false)


def raw_tool_call(name: str, raw_arguments: str, id: str | None = None) -> Answer:
    """A tool call whose ``arguments`` text is sent verbatim (e.g. malformed JSON)."""
    return Answer(tool_calls=(ToolCallSpec(name=name, arguments=raw_arguments, id=id),))


def structured(schema: str | type[Any], fields: Mapping[str, Any], id: str | None = None) -> Answer:
    """What ``with_structured_output(Schema)`` expects: a call of the function named
    after the schema (``schema`` is the name or the class itself), with ``fields`` as
    its arguments."""
    name = schema if isinstance(schema, str) else schema.__name__
    return tool_call(name, fields, id=id)


def basic_auth(user: str, password: str) -> str:
    """The ``Authorization`` value of HTTP Basic auth, as httpx writes it."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def new_tool_call_id(rng: random.Random | None = None) -> str:
    """A fresh tool-call id in Mistral's format (9 characters of [a-zA-Z0-9])."""
    chooser = rng or random.Random()
    return "".join(chooser.choice(_ID_ALPHABET) for _ in range(9))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return "".join(str(t) for t in texts if t is not None)
    return ""


def echo_responder(body: dict[str, Any]) -> Answer:
    """Default standalone responder: echoes the last user message.

    When ``tool_choice`` forces a tool call it calls the forced (or first) tool with
    empty arguments instead, since a text answer would be a script error then.
    """
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    if tools and (choice in ("any", "required") or isinstance(choice, dict)):
        forced = choice if isinstance(choice, dict) else tools[0]
        name = forced["function"]["name"]
        return tool_call(str(name), {})
    last_user = next(
        (m for m in reversed(body.get("messages", [])) if m.get("role") == "user"), None
    )
    said = _content_text(last_user.get("content")) if last_user else ""
    return text(f"echo: {said}")


# --------------------------------------------------------------------------- records

RequestKind: TypeAlias = Literal[
    "served", "rejected", "fault", "script_error", "internal_error", "disconnected"
]


@dataclass
class RecordedRequest:
    """One HTTP request the fake received, and what it did about it."""

    seq: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    """Parsed JSON body (or the raw text when it was not JSON)."""
    stream: bool
    status: int
    """HTTP status returned; 0 when the connection was dropped without a response."""
    kind: RequestKind
    reason: str | None
    """Why it was refused/failed (None when served normally)."""
    response: Any = None
    """JSON body sent, or the list of SSE chunk objects for a stream."""
    answer: Answer | None = None
    acknowledged: bool = False
    """Set by :meth:`FakeMistralServer.acknowledge_problems`."""
    received_at: float = field(default_factory=time.monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's ``messages`` (empty when the body had none)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return cast("list[dict[str, Any]]", self.body["messages"])
        return []

    @property
    def is_problem(self) -> bool:
        """Rejected, script error, or internal error."""
        return self.kind in ("rejected", "script_error", "internal_error")

    def describe(self) -> str:
        """One line for failure messages."""
        return f"#{self.seq} {self.method} {self.path} -> {self.status} [{self.kind}] {self.reason}"


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int
    retry_after: float | None = None
    body: Mapping[str, Any] | str | None = None
    disconnect: bool = False
    after_chunks: int = 0
    ends_early: bool = False
    """The answer's HTTP message ends properly, its reply does not (see ``end_early_next``)."""
    hangs: bool = False
    """Accepted and never answered (see ``hang_next``)."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """A complete non-streaming response decided by the fake."""

    status: int
    kind: RequestKind
    reason: str | None
    body: Mapping[str, Any] | str
    headers: tuple[tuple[str, str], ...] = ()


class _Refusal(Exception):
    def __init__(self, reply: _Reply) -> None:
        super().__init__(reply.reason)
        self.reply = reply


def _error_body(message: Any, type_: str, code: str | None) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": type_, "param": None, "code": code}


def _bad_request(message: str, type_code: tuple[str, str | None]) -> _Refusal:
    return _Refusal(_Reply(400, "rejected", message, _error_body(message, *type_code)))


# --------------------------------------------------------------------------- schema (422)

Loc: TypeAlias = tuple[str | int, ...]


class _SchemaErrors:
    """Collects pydantic-style validation errors (FastAPI 422 ``detail`` entries)."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(
        self, type_: str, loc: Loc, msg: str, value: Any, ctx: dict[str, Any] | None = None
    ) -> None:
        item: dict[str, Any] = {"type": type_, "loc": ["body", *loc], "msg": msg, "input": value}
        if ctx is not None:
            item["ctx"] = ctx
        self.items.append(item)

    # -- scalar checks; each returns True when the value is acceptable
    def string(self, value: Any, loc: Loc, *, nullable: bool = False) -> bool:
        if (value is None and nullable) or isinstance(value, str):
            return True
        self.add("string_type", loc, "Input should be a valid string", value)
        return False

    def boolean(self, value: Any, loc: Loc, *, nullable: bool = True) -> bool:
        if (value is None and nullable) or isinstance(value, bool):
            return True
        self.add("bool_type", loc, "Input should be a valid boolean", value)
        return False

    def integer(
        self, value: Any, loc: Loc, *, ge: int | None = None, nullable: bool = True
    ) -> bool:
        if value is None and nullable:
            return True
        if not isinstance(value, int) or isinstance(value, bool):
            self.add("int_type", loc, "Input should be a valid integer", value)
            return False
        return self._within(value, loc, ge, None)

    def number(
        self,
        value: Any,
        loc: Loc,
        *,
        ge: float | None = None,
        le: float | None = None,
        nullable: bool = True,
    ) -> bool:
        if value is None and nullable:
            return True
        if not isinstance(value, int | float) or isinstance(value, bool):
            self.add("float_type", loc, "Input should be a valid number", value)
            return False
        return self._within(value, loc, ge, le)

    def _within(self, value: float, loc: Loc, ge: float | None, le: float | None) -> bool:
        if ge is not None and value < ge:
            message = f"Input should be greater than or equal to {ge}"
            self.add("greater_than_equal", loc, message, value, {"ge": ge})
            return False
        if le is not None and value > le:
            message = f"Input should be less than or equal to {le}"
            self.add("less_than_equal", loc, message, value, {"le": le})
            return False
        return True

    def literal(self, value: Any, loc: Loc, allowed: Sequence[str]) -> bool:
        if isinstance(value, str) and value in allowed:
            return True
        expected = " or ".join(", ".join(repr(a) for a in allowed).rsplit(", ", 1))
        self.add(
            "literal_error",
            loc,
            f"Input should be {expected}",
            value,
            {"expected": expected},
        )
        return False

    def obj(
        self,
        value: Any,
        loc: Loc,
        *,
        known: Iterable[str],
        required: Iterable[str] = (),
    ) -> bool:
        """A model-like object: a dict without unknown keys and with its required keys."""
        if not isinstance(value, dict):
            self.add(
                "model_attributes_type",
                loc,
                "Input should be a valid dictionary or object to extract fields from",
                value,
            )
            return False
        ok = True
        known_set = set(known)
        for key in value:
            if key not in known_set:
                self.add(
                    "extra_forbidden", (*loc, key), "Extra inputs are not permitted", value[key]
                )
                ok = False
        for key in required:
            if key not in value:
                self.add("missing", (*loc, key), "Field required", value)
                ok = False
        return ok

    def tagged(self, value: Any, loc: Loc, tag: str, allowed: Sequence[str]) -> str | None:
        """Discriminated union: returns the tag when it is usable."""
        if not isinstance(value, dict):
            self.add(
                "model_attributes_type",
                loc,
                "Input should be a valid dictionary or object to extract fields from",
                value,
            )
            return None
        if tag not in value:
            self.add(
                "union_tag_not_found",
                loc,
                f"Unable to extract tag using discriminator '{tag}'",
                value,
                {"discriminator": f"'{tag}'"},
            )
            return None
        found = value[tag]
        if not isinstance(found, str) or found not in allowed:
            expected = ", ".join(f"'{a}'" for a in allowed)
            self.add(
                "union_tag_invalid",
                loc,
                f"Input tag '{found}' found using '{tag}' does not match any of the expected "
                f"tags: {expected}",
                value,
                {"discriminator": f"'{tag}'", "tag": str(found), "expected_tags": expected},
            )
            return None
        return found


_REQUEST_FIELDS: Final = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "top_p",
        "max_tokens",
        "stream",
        "stop",
        "random_seed",
        "response_format",
        "tools",
        "tool_choice",
        "presence_penalty",
        "frequency_penalty",
        "n",
        "prediction",
        "parallel_tool_calls",
        "prompt_mode",
        "safe_prompt",
    }
)
_ROLES: Final = ("system", "user", "assistant", "tool")
_MESSAGE_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "system": ("role", "content"),
    "user": ("role", "content"),
    "assistant": ("role", "content", "tool_calls", "prefix"),
    "tool": ("role", "content", "tool_call_id", "name"),
}
_TOOL_CHOICES: Final = ("auto", "none", "any", "required")


def _check_content(s: _SchemaErrors, value: Any, loc: Loc, chunk_types: Sequence[str]) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        s.add("string_type", loc, "Input should be a valid string", value)
        return
    for j, chunk in enumerate(value):
        cloc = (*loc, j)
        kind = s.tagged(chunk, cloc, "type", chunk_types)
        if kind == "text":
            if s.obj(chunk, cloc, known=("type", "text"), required=("text",)):
                s.string(chunk["text"], (*cloc, "text"))
        elif kind == "image_url" and s.obj(
            chunk, cloc, known=("type", "image_url"), required=("image_url",)
        ):
            image = chunk["image_url"]
            iloc = (*cloc, "image_url")
            if not isinstance(image, str) and s.obj(
                image, iloc, known=("url", "detail"), required=("url",)
            ):
                s.string(image["url"], (*iloc, "url"))
                s.string(image.get("detail"), (*iloc, "detail"), nullable=True)


def _check_tool_call(s: _SchemaErrors, call: Any, loc: Loc) -> None:
    if not s.obj(call, loc, known=("id", "type", "function", "index"), required=("function",)):
        return
    if "id" in call:
        s.string(call["id"], (*loc, "id"))
    if "type" in call and call["type"] is not None:
        s.literal(call["type"], (*loc, "type"), ("function",))
    if "index" in call:
        s.integer(call["index"], (*loc, "index"))
    func = call["function"]
    floc = (*loc, "function")
    if s.obj(func, floc, known=("name", "arguments"), required=("name", "arguments")):
        s.string(func["name"], (*floc, "name"))
        args = func["arguments"]
        if not isinstance(args, str | dict):
            s.add("string_type", (*floc, "arguments"), "Input should be a valid string", args)


def _check_message(s: _SchemaErrors, index: int, message: Any) -> None:
    loc: Loc = ("messages", index)
    role = s.tagged(message, loc, "role", _ROLES)
    if role is None:
        return
    mloc = (*loc, role)
    required = ("content",) if role in ("system", "user", "tool") else ()
    if not s.obj(message, mloc, known=_MESSAGE_FIELDS[role], required=required):
        # keep going: report type errors of the known fields as well
        pass
    chunk_types = ("text", "image_url") if role == "user" else ("text",)
    if "content" in message and not (role == "assistant" and message["content"] is None):
        _check_content(s, message["content"], (*mloc, "content"), chunk_types)
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is not None:
            if isinstance(calls, list):
                for k, call in enumerate(calls):
                    _check_tool_call(s, call, (*mloc, "tool_calls", k))
            else:
                s.add("list_type", (*mloc, "tool_calls"), "Input should be a valid list", calls)
        if "prefix" in message:
            s.boolean(message["prefix"], (*mloc, "prefix"), nullable=False)
    if role == "tool":
        s.string(message.get("tool_call_id"), (*mloc, "tool_call_id"), nullable=True)
        s.string(message.get("name"), (*mloc, "name"), nullable=True)


def _check_tool(s: _SchemaErrors, index: int, tool: Any) -> None:
    loc: Loc = ("tools", index)
    if not s.obj(tool, loc, known=("type", "function"), required=("function",)):
        return
    if "type" in tool and tool["type"] is not None:
        s.literal(tool["type"], (*loc, "type"), ("function",))
    func = tool["function"]
    floc = (*loc, "function")
    if s.obj(
        func,
        floc,
        known=("name", "description", "parameters", "strict"),
        required=("name", "parameters"),
    ):
        s.string(func["name"], (*floc, "name"))
        s.string(func.get("description"), (*floc, "description"), nullable=True)
        if not isinstance(func["parameters"], dict):
            s.add(
                "dict_type",
                (*floc, "parameters"),
                "Input should be a valid dictionary",
                func["parameters"],
            )
        s.boolean(func.get("strict"), (*floc, "strict"))


def _check_request_schema(body: Any) -> list[dict[str, Any]]:
    s = _SchemaErrors()
    if not isinstance(body, dict):
        s.add(
            "model_attributes_type",
            (),
            "Input should be a valid dictionary or object to extract fields from",
            body,
        )
        return s.items
    for key, value in body.items():
        if key not in _REQUEST_FIELDS:
            s.add("extra_forbidden", (key,), "Extra inputs are not permitted", value)
    if "model" not in body:
        s.add("missing", ("model",), "Field required", body)
    else:
        s.string(body["model"], ("model",))
    if "messages" not in body:
        s.add("missing", ("messages",), "Field required", body)
    elif not isinstance(body["messages"], list):
        s.add("list_type", ("messages",), "Input should be a valid list", body["messages"])
    elif not body["messages"]:
        s.add(
            "too_short",
            ("messages",),
            "List should have at least 1 item after validation, not 0",
            [],
            {"field_type": "List", "min_length": 1, "actual_length": 0},
        )
    else:
        for i, message in enumerate(body["messages"]):
            _check_message(s, i, message)
    s.number(body.get("temperature"), ("temperature",), ge=0, le=1.5)
    s.number(body.get("top_p"), ("top_p",), ge=0, le=1)
    s.integer(body.get("max_tokens"), ("max_tokens",), ge=0)
    s.boolean(body.get("stream"), ("stream",))
    stop = body.get("stop")
    if isinstance(stop, list):
        for i, item in enumerate(stop):
            s.string(item, ("stop", i))
    else:
        s.string(stop, ("stop",), nullable=True)
    s.integer(body.get("random_seed"), ("random_seed",), ge=0)
    s.number(body.get("presence_penalty"), ("presence_penalty",), ge=-2, le=2)
    s.number(body.get("frequency_penalty"), ("frequency_penalty",), ge=-2, le=2)
    s.integer(body.get("n"), ("n",), ge=1)
    s.boolean(body.get("parallel_tool_calls"), ("parallel_tool_calls",))
    s.boolean(body.get("safe_prompt"), ("safe_prompt",))
    if body.get("prompt_mode") is not None:
        s.literal(body["prompt_mode"], ("prompt_mode",), ("reasoning",))
    fmt = body.get("response_format")
    if fmt is not None and s.obj(fmt, ("response_format",), known=("type", "json_schema")):
        if "type" in fmt:
            s.literal(
                fmt["type"], ("response_format", "type"), ("text", "json_object", "json_schema")
            )
        schema = fmt.get("json_schema")
        sloc: Loc = ("response_format", "json_schema")
        if schema is not None and s.obj(
            schema,
            sloc,
            known=("name", "description", "schema", "strict"),
            required=("name", "schema"),
        ):
            s.string(schema["name"], (*sloc, "name"))
            s.boolean(schema.get("strict"), (*sloc, "strict"))
    prediction = body.get("prediction")
    if prediction is not None and s.obj(prediction, ("prediction",), known=("type", "content")):
        if "type" in prediction:
            s.literal(prediction["type"], ("prediction", "type"), ("content",))
        s.string(prediction.get("content", ""), ("prediction", "content"))
    tools = body.get("tools")
    if isinstance(tools, list):
        for i, tool in enumerate(tools):
            _check_tool(s, i, tool)
    elif tools is not None:
        s.add("list_type", ("tools",), "Input should be a valid list", tools)
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICES:
            s.add(
                "enum",
                ("tool_choice",),
                "Input should be 'auto', 'none', 'any' or 'required'",
                choice,
                {"expected": "'auto', 'none', 'any' or 'required'"},
            )
    elif choice is not None and s.obj(
        choice, ("tool_choice",), known=("type", "function"), required=("function",)
    ):
        if "type" in choice:
            s.literal(choice["type"], ("tool_choice", "type"), ("function",))
        func = choice["function"]
        if s.obj(func, ("tool_choice", "function"), known=("name",), required=("name",)):
            s.string(func["name"], ("tool_choice", "function", "name"))
    return s.items


# --------------------------------------------------------------------------- semantics (400)

_JSON_TYPES: Final = frozenset(
    {"object", "array", "string", "number", "integer", "boolean", "null"}
)


def _json_schema_problem(schema: Mapping[str, Any], where: str = "parameters") -> str | None:
    """A light Draft-7 meta-check of a tool's ``parameters`` schema."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    problems = [f"{where}.type: {k!r} is not a JSON type" for k in kinds if k not in _JSON_TYPES]
    props = schema.get("properties")
    if props is not None and not isinstance(props, dict):
        problems.append(f"{where}.properties: {props!r} is not of type 'object'")
    elif props is not None:
        for name, sub in props.items():
            if isinstance(sub, dict):
                problems.append(_json_schema_problem(sub, f"{where}.{name}") or "")
            elif not isinstance(sub, bool):
                problems.append(f"{where}.properties.{name}: {sub!r} is not of type 'object'")
    required = schema.get("required")
    if required is not None and (
        not isinstance(required, list) or not all(isinstance(r, str) for r in required)
    ):
        problems.append(f"{where}.required: {required!r} is not an array of strings")
    items = schema.get("items")
    if isinstance(items, dict):
        problems.append(_json_schema_problem(items, f"{where}.items") or "")
    return next((p for p in problems if p), None)


def _check_tools_semantics(body: Mapping[str, Any]) -> None:
    tools = body.get("tools") or []
    names: list[str] = []
    for tool in tools:
        func = tool["function"]
        name = func["name"]
        if not FUNCTION_NAME_RE.match(name):
            raise _bad_request(
                f"Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores "
                "and dashes, with a maximum length of 64.",
                _GENERIC_ERROR,
            )
        if name in names:
            raise _bad_request(f"Duplicate tool name: '{name}'", _GENERIC_ERROR)
        names.append(name)
        if problem := _json_schema_problem(func["parameters"]):
            raise _bad_request(f"Invalid tool schema: {problem}", _GENERIC_ERROR)
    choice = body.get("tool_choice")
    if choice in ("any", "required") and not names:
        raise _bad_request(
            f"tool_choice '{choice}' requires at least one tool in 'tools'", _GENERIC_ERROR
        )
    if isinstance(choice, dict):
        wanted = choice["function"]["name"]
        if wanted not in names:
            raise _bad_request(
                f"tool_choice names function '{wanted}' which is not among the provided tools",
                _GENERIC_ERROR,
            )


_NEXT_ROLES: Final[Mapping[str, frozenset[str]]] = {
    # the real validator's table (mistral-common, serving mode)
    "system": frozenset({"user", "assistant", "system"}),
    "user": frozenset({"assistant", "system", "user"}),
    "assistant": frozenset({"assistant", "user", "tool"}),
    "tool": frozenset({"assistant", "tool"}),
}


def _check_conversation(messages: Sequence[Mapping[str, Any]]) -> None:
    """The real API's conversation rules; raises ``_Refusal`` on the first violation.

    Order of checks follows the real validator: structure first (first/last role, role
    transitions, call/answer counts), then per-message content (assistant content vs
    tool calls, id formats, names, arguments), then the id pairing.
    """
    roles = [str(m["role"]) for m in messages]
    # rule 7 (second half): the conversation starts with system or user
    if roles[0] not in ("system", "user"):
        raise _bad_request(
            "Conversation must start with a user message or system message", _ORDER_ERROR
        )
    # rule 5: last message is user/tool (or an assistant prefix)
    last = messages[-1]
    if roles[-1] == "assistant" and last.get("prefix") is not True:
        raise _bad_request(
            "Expected last role User or Tool (or Assistant with prefix True) for serving "
            "but got assistant",
            _ORDER_ERROR,
        )
    # rules 3 and 4: role transitions
    for prev, cur in itertools.pairwise(roles):
        if cur not in _NEXT_ROLES[prev]:
            raise _bad_request(f"Unexpected role '{cur}' after role '{prev}'", _ORDER_ERROR)
    # rule 2 (counting part): all calls answered before the next assistant / the end
    expected = 0
    for i, message in enumerate(messages):
        if i == 0:
            continue
        if message["role"] == "tool":
            expected -= 1
        elif message["role"] == "assistant":
            if expected != 0:
                raise _bad_request(
                    "Not the same number of function calls and responses", _ORDER_ERROR
                )
            expected = len(message.get("tool_calls") or [])
    if expected != 0:
        raise _bad_request("Not the same number of function calls and responses", _ORDER_ERROR)
    # per-message content
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            _check_assistant_content(message, is_last=i == len(messages) - 1)
        elif message["role"] == "tool":
            _check_tool_message(message)
    # rule 2 (pairing part): each tool message answers a distinct call of the assistant
    # message just before the run of tool messages
    pending: dict[str, bool] = {}
    for message in messages:
        if message["role"] == "assistant":
            ids = [str(c.get("id")) for c in message.get("tool_calls") or []]
            if len(ids) != len(set(ids)):
                raise _bad_request(
                    f"Duplicate tool call ids in one assistant message: {ids}", _ORDER_ERROR
                )
            pending = dict.fromkeys(ids, False)
        elif message["role"] == "tool":
            call_id = str(message["tool_call_id"])
            if call_id not in pending:
                raise _bad_request(
                    f"Tool call id {call_id} does not match any tool call of the preceding "
                    "assistant message",
                    _ORDER_ERROR,
                )
            if pending[call_id]:
                raise _bad_request(
                    f"Tool call id {call_id} was answered more than once", _ORDER_ERROR
                )
            pending[call_id] = True
        else:
            pending = {}


def _check_assistant_content(message: Mapping[str, Any], *, is_last: bool) -> None:
    has_content = bool(message.get("content"))
    calls = message.get("tool_calls") or []
    # rule 6
    if has_content and calls:
        raise _bad_request(
            "Assistant message must have either content or tool_calls, but not both.",
            _GENERIC_ERROR,
        )
    if not has_content and not calls:
        raise _bad_request(
            "Assistant message must have either content or tool_calls, but not none.",
            _GENERIC_ERROR,
        )
    for call in calls:
        # rule 1 (assistant side)
        call_id = call.get("id", "null")
        if call_id == "null":
            raise _bad_request(
                "Tool call id has to be defined in serving mode.", _FUNCTION_CALL_ERROR
            )
        if not TOOL_CALL_ID_RE.match(call_id):
            raise _bad_request(
                f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9.",
                _FUNCTION_CALL_ERROR,
            )
        name = call["function"]["name"]
        if not FUNCTION_NAME_RE.match(name):
            raise _bad_request(
                f"Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores "
                "and dashes, with a maximum length of 64.",
                _FUNCTION_CALL_ERROR,
            )
        args = call["function"]["arguments"]
        if isinstance(args, str):
            try:
                parsed = json.loads(args)
            except json.JSONDecodeError as exc:
                raise _bad_request(
                    f"Tool call {call_id} arguments are not valid JSON: {exc}",
                    _FUNCTION_CALL_ERROR,
                ) from None
            if not isinstance(parsed, dict):
                raise _bad_request(
                    f"Tool call {call_id} arguments must be a JSON object", _FUNCTION_CALL_ERROR
                )
    if message.get("prefix") is True and not is_last:
        raise _bad_request(
            "Assistant message with prefix True must be last message", _GENERIC_ERROR
        )


def _check_tool_message(message: Mapping[str, Any]) -> None:
    name = message.get("name")
    if name is not None and not FUNCTION_NAME_RE.match(name):
        raise _bad_request(
            f"Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores "
            "and dashes, with a maximum length of 64.",
            _GENERIC_ERROR,
        )
    call_id = message.get("tool_call_id")
    # rule 7 (first half)
    if call_id is None:
        raise _bad_request("Tool call id has to be defined.", _GENERIC_ERROR)
    # rule 1 (tool side)
    if not TOOL_CALL_ID_RE.match(call_id):
        raise _bad_request(
            f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9.",
            _FUNCTION_CALL_ERROR,
        )


def _tool_call_problem(answer: Answer, body: Mapping[str, Any]) -> str | None:
    offered = [t["function"]["name"] for t in body.get("tools") or []]
    choice = body.get("tool_choice")
    forced_name = choice["function"]["name"] if isinstance(choice, dict) else None
    for call in answer.tool_calls:
        if call.name not in offered:
            return (
                f"scripted a call of tool {call.name!r}, but the request offered "
                f"{offered or 'no tools'}: a real model can only call tools it was given"
            )
        if forced_name is not None and call.name != forced_name:
            return f"scripted a call of tool {call.name!r}, but tool_choice forces {forced_name!r}"
    if choice == "none":
        return "scripted a tool call, but the request has tool_choice 'none'"
    parallel_refused = body.get("parallel_tool_calls") is False
    if parallel_refused and len(answer.tool_calls) > 1 and not answer.ignores_parallel_false:
        return "scripted several tool calls, but the request has parallel_tool_calls false"
    return None


def _text_problem(answer: Answer, body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if choice in ("any", "required") or isinstance(choice, dict):
        return f"scripted a text answer, but tool_choice {choice!r} forces a tool call"
    fmt = body.get("response_format") or {}
    if fmt.get("type") in ("json_object", "json_schema"):
        try:
            json.loads(answer.content)
        except json.JSONDecodeError:
            return (
                f"response_format {fmt.get('type')!r} requires a JSON answer, but the scripted "
                f"text is not JSON: {answer.content[:80]!r}"
            )
    return None


def _script_problem(answer: Answer, body: Mapping[str, Any]) -> str | None:
    """Why a real model could not have given ``answer`` to ``body`` (None if it could)."""
    if (body.get("n") or 1) != 1:
        return "the fake only produces one choice; n > 1 is not supported"
    if answer.tool_calls:
        return _tool_call_problem(answer, body)
    return _text_problem(answer, body)


def _estimate_tokens(payload: str) -> int:
    return max(1, math.ceil(len(payload) / 4))


# --------------------------------------------------------------------------- HTTP plumbing


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeMistralServer) -> None:
        self.fake = fake
        self.closing = False
        self.stop_event = threading.Event()
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def track(self, sock: socket.socket) -> bool:
        with self.connections_lock:
            if self.closing:
                return False
            self.connections.add(sock)
            return True

    def untrack(self, sock: socket.socket) -> None:
        with self.connections_lock:
            self.connections.discard(sock)

    def close_all_connections(self) -> None:
        with self.connections_lock:
            self.closing = True
            socks = list(self.connections)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # client went away, or we are stopping
            return
        self.fake._record_internal_error(traceback.format_exc())


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeMistral/1.0"
    sys_version = ""

    @property
    def httpd(self) -> _HTTPServer:
        return cast("_HTTPServer", self.server)

    def setup(self) -> None:
        super().setup()
        if not self.httpd.track(self.connection):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.httpd.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log (see ``FakeMistralServer(log=True)``)."""

    def _dispatch(self) -> None:
        try:
            self.httpd.fake._serve(self)
        except OSError:
            self.close_connection = True

    do_POST = _dispatch
    do_GET = _dispatch
    do_PUT = _dispatch
    do_PATCH = _dispatch
    do_DELETE = _dispatch


def _read_body(handler: _Handler) -> bytes:
    """The request body, framed by Content-Length or chunked transfer encoding."""
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        parts: list[bytes] = []
        while True:
            size = int(handler.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()  # CRLF after each chunk
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length > 0 else b""


def _encode(body: Mapping[str, Any] | str) -> tuple[bytes, str]:
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=utf-8"
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), "application/json"


def _send(handler: _Handler, reply: _Reply) -> None:
    data, content_type = _encode(reply.body)
    handler.send_response(reply.status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in reply.headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def _format_retry_after(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


def _fault_reply(fault: _Fault) -> _Reply:
    headers: tuple[tuple[str, str], ...] = ()
    if fault.retry_after is not None:
        headers = (("Retry-After", _format_retry_after(fault.retry_after)),)
    if fault.body is not None:
        body: Mapping[str, Any] | str = fault.body
    elif fault.status == HTTPStatus.TOO_MANY_REQUESTS:
        body = RATE_LIMIT_BODY
    elif fault.status == HTTPStatus.SERVICE_UNAVAILABLE:
        body = _error_body("Service unavailable", "service_unavailable", "1000")
    elif fault.status == HTTPStatus.BAD_GATEWAY:
        body = _error_body("Bad gateway", "bad_gateway", "1000")
    elif fault.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        body = _error_body("Internal server error", "internal_server_error", "1000")
    else:
        body = _error_body(HTTPStatus(fault.status).phrase, "invalid_request_error", None)
    return _Reply(fault.status, "fault", f"injected fault {fault.status}", body, headers)


# --------------------------------------------------------------------------- the server


class FakeMistralServer:
    """A strict, scriptable fake of ``POST /v1/chat/completions``.

    Thread-safe: the HTTP server answers each connection on its own thread, and every
    public method may be called from any thread (or event loop) while it runs.

    Args:
        host: interface to bind (loopback by default).
        port: 0 picks a free port on the first :meth:`start`; later starts reuse it.
        latency: seconds to wait before answering each request (benchmarks, timeouts).
        stream_chunk_delay: seconds to wait between SSE chunks.
        stream_chunk_chars: characters of text per streamed delta.
        api_key: when set, the bearer token must equal it (else any non-empty token).
        proxy_credentials: ``(user, password)`` of a proxy in front of the API: requests
            must carry exactly that Basic auth instead of a bearer token. It is what the
            client sends for ``MISTRAL_BASE_URL=http://user:password@host/v1`` (httpx
            turns a URL's userinfo into Basic auth, which replaces the bearer key).
        seed: seed for generated tool-call ids (deterministic by default).
        log: print one line per request to stderr (standalone use).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        latency: float = 0.0,
        stream_chunk_delay: float = 0.0,
        stream_chunk_chars: int = 4,
        api_key: str | None = None,
        proxy_credentials: tuple[str, str] | None = None,
        seed: int | None = 0,
        log: bool = False,
    ) -> None:
        if stream_chunk_chars < 1:
            msg = "stream_chunk_chars must be at least 1"
            raise ValueError(msg)
        self.host = host
        self._port = port
        self.latency = latency
        self.stream_chunk_delay = stream_chunk_delay
        self.stream_chunk_chars = stream_chunk_chars
        self.api_key = api_key
        self.proxy_credentials = proxy_credentials
        self.log = log
        self._seed = seed
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._lifecycle = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._script: deque[Answer] = deque()
        self._responder: Responder | None = None
        self._faults: deque[_Fault] = deque()
        self._records: list[RecordedRequest] = []
        self._arrivals: list[float] = []
        self._served = 0
        self._seq = 0

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> Self:
        """Start serving (no-op if running). Reuses the port of a previous start."""
        with self._lifecycle:
            if self._httpd is not None:
                return self
            httpd = _HTTPServer((self.host, self._port), self)
            self._port = int(httpd.server_address[1])
            thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"fake-mistral:{self._port}",
                daemon=True,
            )
            self._httpd, self._thread = httpd, thread
            thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: close the listening socket and every open connection, so
        clients get ``httpx.ConnectError`` until :meth:`start` is called again."""
        with self._lifecycle:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
            if httpd is None:
                return
            httpd.stop_event.set()
            httpd.shutdown()
            httpd.server_close()
            httpd.close_all_connections()
            if thread is not None:
                thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        """The bound port (0 before the first start when constructed with port 0)."""
        return self._port

    @property
    def base_url(self) -> str:
        """What to give ``ChatMistralAI(base_url=...)`` / ``MISTRAL_BASE_URL``."""
        return f"http://{self.host}:{self._port}/v1"

    @property
    def url(self) -> str:
        """Full URL of the chat-completions endpoint."""
        return f"http://{self.host}:{self._port}{CHAT_COMPLETIONS_PATH}"

    # -- scripting -----------------------------------------------------------------

    def script(self, *answers: Answer) -> None:
        """Queue answers; each successfully validated request consumes the next one."""
        for answer in answers:
            if not isinstance(cast("object", answer), Answer):
                msg = f"script() takes Answer objects (text(), tool_call(), ...), got {answer!r}"
                raise TypeError(msg)
        with self._lock:
            self._script.extend(answers)

    def respond_with(self, fn: Responder | None) -> None:
        """Install ``fn(request_body) -> Answer | None``, used when the script is empty
        (None uninstalls it)."""
        with self._lock:
            self._responder = fn

    @property
    def remaining_script(self) -> int:
        """How many scripted answers are still queued."""
        with self._lock:
            return len(self._script)

    # -- fault injection -------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        times: int = 1,
        retry_after: float | None = None,
        body: Mapping[str, Any] | str | None = None,
    ) -> None:
        """Answer the next ``times`` valid requests with HTTP ``status``.

        429 gets Mistral's rate-limit body; 500/502/503 a generic error body; ``body``
        overrides it (a str is sent as text/plain). ``retry_after`` adds a
        ``Retry-After`` header. Faulted requests do not consume scripted answers.
        Invalid requests are still rejected (the fault stays queued for the next one).
        """
        if times < 1:
            msg = "times must be at least 1"
            raise ValueError(msg)
        HTTPStatus(status)  # raises ValueError on nonsense statuses
        with self._lock:
            self._faults.extend(
                _Fault(status=status, retry_after=retry_after, body=body) for _ in range(times)
            )

    def disconnect_next(self, times: int = 1, *, after_chunks: int = 0) -> None:
        """Drop the connection of the next ``times`` valid requests.

        With ``after_chunks=0`` nothing is sent (the client sees
        ``httpx.RemoteProtocolError``, which ChatMistralAI retries). With
        ``after_chunks=N`` a streaming request gets N SSE chunks and then the connection
        is cut mid-stream (that consumes the scripted answer); a non-streaming request
        is cut before any response.
        """
        if times < 1 or after_chunks < 0:
            msg = "times must be >= 1 and after_chunks >= 0"
            raise ValueError(msg)
        with self._lock:
            self._faults.extend(
                _Fault(status=0, disconnect=True, after_chunks=after_chunks) for _ in range(times)
            )

    def end_early_next(self, times: int = 1, *, after_chunks: int = 3) -> None:
        """End the next ``times`` valid answers early, with a well-formed HTTP message: what a
        provider or proxy that gives up mid-reply sends.

        A streaming request gets at most ``after_chunks`` SSE chunks, never the final one
        (with its ``finish_reason``) nor ``data: [DONE]``, then the end of the chunked body:
        the client sees a stream that simply stops. A non-streaming request gets the first
        half of its JSON body, then the end of the body. Either consumes the scripted answer.
        """
        if times < 1 or after_chunks < 0:
            msg = "times must be >= 1 and after_chunks >= 0"
            raise ValueError(msg)
        with self._lock:
            self._faults.extend(
                _Fault(status=200, ends_early=True, after_chunks=after_chunks) for _ in range(times)
            )

    def hang_next(self, times: int = 1) -> None:
        """Accept the next ``times`` valid requests and never answer them: not a byte, not
        even a status line, until the client hangs up (recorded as ``disconnected`` with how
        long it waited) or the server stops. Held requests consume no scripted answer."""
        if times < 1:
            msg = "times must be at least 1"
            raise ValueError(msg)
        with self._lock:
            self._faults.extend(_Fault(status=0, hangs=True) for _ in range(times))

    # -- observation -----------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received since the last :meth:`reset`, in arrival order."""
        with self._lock:
            return list(self._records)

    def _of_kind(self, *kinds: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._records if r.kind in kinds]

    @property
    def rejections(self) -> list[RecordedRequest]:
        """Requests refused for breaking the API's rules (401/404/405/422/400)."""
        return self._of_kind("rejected")

    @property
    def script_errors(self) -> list[RecordedRequest]:
        """Requests answered 500 because the script had no (plausible) answer."""
        return self._of_kind("script_error")

    @property
    def internal_errors(self) -> list[RecordedRequest]:
        """Requests that hit a bug in the fake itself (500)."""
        return self._of_kind("internal_error")

    @property
    def faults(self) -> list[RecordedRequest]:
        """Requests answered with an injected fault or dropped connection."""
        return self._of_kind("fault", "disconnected")

    @property
    def received(self) -> int:
        """Number of requests whose body has been read, including those still waiting
        (``latency``) or streaming: :attr:`requests` records a request only once answered."""
        with self._lock:
            return self._seq

    def received_times(self) -> list[float]:
        """When each request counted by :attr:`received` arrived (``time.monotonic()``),
        held and streaming ones included."""
        with self._lock:
            return list(self._arrivals)

    @property
    def served(self) -> int:
        """Number of requests answered successfully (HTTP 200)."""
        with self._lock:
            return self._served

    @property
    def last_request(self) -> RecordedRequest | None:
        with self._lock:
            return self._records[-1] if self._records else None

    def unacknowledged_problems(self) -> list[RecordedRequest]:
        """Rejections, script errors and internal errors not yet acknowledged."""
        with self._lock:
            return [r for r in self._records if r.is_problem and not r.acknowledged]

    def acknowledge_problems(self) -> list[RecordedRequest]:
        """Mark every current problem as expected (the fixture then does not fail the
        test for them); returns them. They stay visible in :attr:`rejections` etc."""
        with self._lock:
            problems = [r for r in self._records if r.is_problem and not r.acknowledged]
            for record in problems:
                record.acknowledged = True
            return problems

    def describe_problems(self, problems: Iterable[RecordedRequest] | None = None) -> str:
        """A readable report, for assertion messages."""
        items = list(self.unacknowledged_problems() if problems is None else problems)
        lines = [f"fake Mistral saw {len(items)} unexpected problem(s):"]
        lines.extend(f"  {r.describe()}" for r in items)
        return "\n".join(lines)

    def reset(self) -> None:
        """Forget records, counters, scripted answers, faults and the responder.
        Configuration (port, latency, ...) is kept; id generation restarts from the seed."""
        with self._lock:
            self._script.clear()
            self._faults.clear()
            self._records.clear()
            self._arrivals.clear()
            self._responder = None
            self._served = 0
            self._seq = 0
            self._rng = random.Random(self._seed)

    # -- request handling --------------------------------------------------------------

    def _record_internal_error(self, reason: str) -> None:
        with self._lock:
            self._seq += 1
            self._records.append(
                RecordedRequest(
                    seq=self._seq,
                    method="?",
                    path="?",
                    headers={},
                    body=None,
                    stream=False,
                    status=500,
                    kind="internal_error",
                    reason=reason,
                )
            )

    def _commit(self, record: RecordedRequest) -> None:
        """Make a record visible. Called BEFORE the response is written, so a client
        that has its answer always finds the record already there."""
        with self._lock:
            if record.kind == "served":
                self._served += 1
            self._records.append(record)
        if self.log:
            print(f"fake-mistral: {record.describe()}", file=sys.stderr, flush=True)

    def _serve(self, handler: _Handler) -> None:
        raw = _read_body(handler)
        with self._lock:
            self._seq += 1
            seq = self._seq
            self._arrivals.append(time.monotonic())
        record = RecordedRequest(
            seq=seq,
            method=handler.command,
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=None,
            stream=False,
            status=0,
            kind="internal_error",
            reason=None,
        )
        try:
            self._serve_checked(handler, raw, record)
        except OSError:
            raise
        except Exception:
            reason = f"fake-mistral internal error:\n{traceback.format_exc()}"
            with self._lock:
                already_answered = any(r is record for r in self._records)
            if already_answered:  # the response had started: just record and hang up
                self._record_internal_error(reason)
                handler.close_connection = True
                return
            record.status, record.kind, record.reason = 500, "internal_error", reason
            record.response = _error_body(reason, "internal_server_error", None)
            self._commit(record)
            _send(handler, _Reply(500, "internal_error", reason, record.response))

    def _reply(self, handler: _Handler, record: RecordedRequest, reply: _Reply) -> None:
        record.status, record.kind, record.reason = reply.status, reply.kind, reply.reason
        record.response = reply.body
        self._commit(record)
        _send(handler, reply)

    def _serve_checked(self, handler: _Handler, raw: bytes, record: RecordedRequest) -> None:
        try:
            record.body = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            record.body = raw.decode("utf-8", errors="replace")
            parse_error: str | None = str(exc)
        else:
            parse_error = None
        if isinstance(record.body, dict):
            record.stream = record.body.get("stream") is True

        try:
            self._check_transport(handler, parse_error, record)
            body = cast("dict[str, Any]", record.body)
            errors = _check_request_schema(body)
            if errors:
                reason = "; ".join(
                    f"{e['type']} at {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                    for e in errors
                )
                raise _Refusal(
                    _Reply(
                        422,
                        "rejected",
                        reason,
                        _error_body({"detail": errors}, "invalid_request_error", None),
                    )
                )
            _check_tools_semantics(body)
            _check_conversation(body["messages"])
        except _Refusal as refusal:
            self._reply(handler, record, refusal.reply)
            return

        stop_event = handler.httpd.stop_event
        if self.latency > 0 and stop_event.wait(self.latency):
            record.kind, record.reason = "disconnected", "server stopped during latency"
            self._commit(record)
            handler.close_connection = True
            return

        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.hangs:
            _hold(handler, record)
            self._commit(record)
            handler.close_connection = True
            return
        # A fault that ends the answer early needs the answer first; so does a mid-stream cut.
        cut_later = fault is not None and (
            fault.ends_early or (fault.disconnect and fault.after_chunks > 0 and record.stream)
        )
        if fault is not None and not cut_later:
            if fault.disconnect:
                record.kind, record.reason = "disconnected", "injected disconnect"
                self._commit(record)
                handler.close_connection = True
                return
            self._reply(handler, record, _fault_reply(fault))
            return

        answer, problem = self._next_answer(body, record.seq)
        if answer is not None and problem is None:
            problem = _script_problem(answer, body)
        if answer is None or problem is not None:
            reason = f"fake-mistral script error: {problem}"
            self._reply(
                handler,
                record,
                _Reply(
                    500,
                    "script_error",
                    reason,
                    _error_body(reason, "fake_mistral_script_error", None),
                ),
            )
            return
        record.answer = answer
        ends_early = fault is not None and fault.ends_early
        if record.stream:
            cut_after = fault.after_chunks if fault is not None else None
            self._stream(handler, record, body, answer, cut_after, ends_early=ends_early)
        elif ends_early:
            self._send_cut_short(handler, record, self._completion(body, answer))
        else:
            self._reply(
                handler, record, _Reply(200, "served", None, self._completion(body, answer))
            )

    def _check_transport(
        self, handler: _Handler, parse_error: str | None, record: RecordedRequest
    ) -> None:
        path = handler.path.split("?", 1)[0]
        if path != CHAT_COMPLETIONS_PATH:
            raise _Refusal(
                _Reply(404, "rejected", f"no such endpoint: {path}", {"detail": "Not Found"})
            )
        if handler.command != "POST":
            raise _Refusal(
                _Reply(
                    405,
                    "rejected",
                    f"method {handler.command} not allowed",
                    {"detail": "Method Not Allowed"},
                )
            )
        auth = handler.headers.get("Authorization") or ""
        if self.proxy_credentials is not None:
            bad = auth != basic_auth(*self.proxy_credentials)
        else:
            scheme, _, token = auth.partition(" ")
            token = token.strip()
            # "Bearer None" is what ChatMistralAI sends when it has no API key at all.
            bad = scheme.lower() != "bearer" or not token or token == "None"
            if not bad and self.api_key is not None:
                bad = token != self.api_key
        if bad:
            raise _Refusal(
                _Reply(
                    401,
                    "rejected",
                    f"unauthorized (Authorization: {auth!r})",
                    {"message": "Unauthorized", "request_id": uuid.uuid4().hex},
                )
            )
        detail: list[dict[str, Any]]
        if parse_error is not None:
            detail = [
                {
                    "type": "json_invalid",
                    "loc": ["body", 0],
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": parse_error},
                }
            ]
            raise _Refusal(
                _Reply(
                    422,
                    "rejected",
                    f"json_invalid: {parse_error}",
                    _error_body({"detail": detail}, "invalid_request_error", None),
                )
            )
        if record.body is None:
            detail = [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]
            raise _Refusal(
                _Reply(
                    422,
                    "rejected",
                    "missing body",
                    _error_body({"detail": detail}, "invalid_request_error", None),
                )
            )

    def _next_answer(self, body: dict[str, Any], seq: int) -> tuple[Answer | None, str | None]:
        with self._lock:
            if self._script:
                return self._script.popleft(), None
            responder = self._responder
        if responder is None:
            last_user = next(
                (m for m in reversed(body["messages"]) if m.get("role") == "user"), None
            )
            said = _content_text(last_user.get("content"))[:80] if last_user else ""
            return None, (
                f"script exhausted: request #{seq} arrived but no scripted answer is left and "
                f"no respond_with() responder is installed (last user message: {said!r})"
            )
        try:
            answer = responder(body)
        except Exception:
            return None, f"respond_with() responder raised:\n{traceback.format_exc()}"
        if answer is None:
            return None, f"script exhausted: the responder returned None for request #{seq}"
        if not isinstance(cast("object", answer), Answer):
            return None, f"respond_with() responder returned {answer!r}, not an Answer"
        return answer, None

    def _wire_calls(self, answer: Answer) -> list[dict[str, Any]]:
        with self._lock:
            ids = [c.id or new_tool_call_id(self._rng) for c in answer.tool_calls]
        return [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
                "index": i,
            }
            for i, (c, call_id) in enumerate(zip(answer.tool_calls, ids, strict=True))
        ]

    @staticmethod
    def _usage(body: Mapping[str, Any], answer: Answer) -> dict[str, int]:
        prompt = _estimate_tokens(
            json.dumps(body["messages"], ensure_ascii=False)
            + json.dumps(body.get("tools") or [], ensure_ascii=False)
        )
        completion = _estimate_tokens(
            answer.content + "".join(c.name + c.arguments for c in answer.tool_calls)
        )
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _completion(self, body: Mapping[str, Any], answer: Answer) -> dict[str, Any]:
        calls = self._wire_calls(answer)
        return {
            "id": uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": answer.content,
                        "tool_calls": calls or None,
                        "prefix": False,
                    },
                    "finish_reason": answer.effective_finish_reason,
                }
            ],
            "usage": self._usage(body, answer),
        }

    def _stream_chunks(self, body: Mapping[str, Any], answer: Answer) -> list[dict[str, Any]]:
        base = {
            "id": uuid.uuid4().hex,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        chunks = [chunk({"role": "assistant", "content": ""})]
        size = self.stream_chunk_chars
        chunks.extend(
            chunk({"content": answer.content[i : i + size]})
            for i in range(0, len(answer.content), size)
        )
        if answer.tool_calls:
            chunks.append(chunk({"tool_calls": self._wire_calls(answer)}))
        final = chunk({"content": ""}, answer.effective_finish_reason)
        final["usage"] = self._usage(body, answer)
        chunks.append(final)
        return chunks

    def _stream(
        self,
        handler: _Handler,
        record: RecordedRequest,
        body: Mapping[str, Any],
        answer: Answer,
        cut_after: int | None,
        *,
        ends_early: bool = False,
    ) -> None:
        chunks = self._stream_chunks(body, answer)
        record.status, record.response = 200, chunks
        if ends_early:
            # Never the final chunk (the one with finish_reason), never [DONE].
            cut_after = min(cut_after or 0, len(chunks) - 1)
            record.kind = "fault"
            record.reason = f"injected early end after {cut_after} chunks"
        else:
            record.kind = "served" if cut_after is None else "disconnected"
            if cut_after is not None:
                record.reason = f"injected disconnect after {cut_after} chunks"
        self._commit(record)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        stop_event = handler.httpd.stop_event
        events = [b"data: " + _encode(c)[0] + b"\n\n" for c in chunks]
        events.append(b"data: [DONE]\n\n")
        for i, event in enumerate(events):
            if cut_after is not None and i >= cut_after:
                if ends_early:
                    break  # the body ends as a complete HTTP message
                handler.close_connection = True
                return
            if i and self.stream_chunk_delay > 0 and stop_event.wait(self.stream_chunk_delay):
                handler.close_connection = True
                return
            handler.wfile.write(b"%X\r\n%s\r\n" % (len(event), event))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def _send_cut_short(
        self, handler: _Handler, record: RecordedRequest, completion: Mapping[str, Any]
    ) -> None:
        """The first half of the completion's JSON, as a complete HTTP message: what the
        client reads when the provider (or a proxy) gives up mid-body."""
        data = _encode(completion)[0]
        short = data[: len(data) // 2]
        record.status, record.kind, record.response = 200, "fault", short.decode(errors="replace")
        record.reason = f"injected early end after {len(short)} of {len(data)} bytes"
        self._commit(record)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.write(b"%X\r\n%s\r\n0\r\n\r\n" % (len(short), short))
        handler.wfile.flush()


def _hold(handler: _Handler, record: RecordedRequest) -> None:
    """Say nothing to a request until its client hangs up or the server stops."""
    started = time.monotonic()
    sock = handler.connection
    stop_event = handler.httpd.stop_event
    while not stop_event.wait(0.02):
        readable, _, _ = select.select([sock], [], [], 0)
        if readable and sock.recv(1, socket.MSG_PEEK) == b"":
            waited = time.monotonic() - started
            record.kind, record.reason = (
                "disconnected",
                f"held; the client hung up after {waited:.2f} s",
            )
            return
    record.kind, record.reason = "disconnected", "held until the server stopped"


# --------------------------------------------------------------------------- standalone


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.support.fake_mistral [--host H] [--port P]``: serve with an echo
    responder until interrupted."""
    parser = argparse.ArgumentParser(description="Strict fake Mistral chat-completions API")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    args = parser.parse_args(argv)
    server = FakeMistralServer(args.host, args.port, latency=args.latency, log=True)
    server.respond_with(echo_responder)
    server.start()
    print(
        f"fake Mistral listening on {server.base_url} "
        f"(export MISTRAL_BASE_URL={server.base_url} MISTRAL_API_KEY={FAKE_API_KEY})",
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
