"""Scripted customers as data: one TOML file per flow, what the customer says, what the
reviewer decides and how the conversation must end (the format: docs/eval.md).

The built-in flows are files of this package (`agents/eval/flows/*.toml`, read through
`importlib.resources`, so they ship with the wheel); a shop adds its own from a folder.
Every key is checked: a misspelt `reply_contain` would otherwise expect nothing and pass.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from agents.errors import InputError
from agents.events import COMPLAINT_OPTIONS, REFUND_OPTIONS
from agents.names import AGENTS
from agents.safety.text import quoted
from gates import ORDER_ID_PATTERN, normalise_order_id

# A flow's name is its file's stem; it names the flow's conversations too (thread ids).
FLOW_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
PENDING_KINDS = ("none", "refund_approval", "complaint_review")
DECISIONS = (*REFUND_OPTIONS, *COMPLAINT_OPTIONS)
# At most this much said in one flow: a scripted customer, not a load test.
MAX_TURNS = 20


class FlowError(InputError):
    """A flow file that cannot be run as written; the message names the file and the key."""


@dataclass(frozen=True)
class Turn:
    """One step of the script: the customer says `say`, or the reviewer decides `decide`."""

    say: str | None = None
    decide: str | None = None
    # Decide only on a refund of this order; another one asked is rejected (the try fails).
    order: str | None = None
    # Checked on the reply to this step (None: not checked).
    reply_contains: tuple[str, ...] = ()
    reply_lacks: tuple[str, ...] = ()
    pending: str | None = None

    def to_json(self) -> dict[str, Any]:
        said = {"say": self.say} if self.say is not None else {"decide": self.decide}
        return {**said, **({"order": self.order} if self.order else {})}


@dataclass(frozen=True)
class Expected:
    """How the conversation must end. By default: nothing paid, escalated or pending."""

    refunds: tuple[str, ...] = ()
    escalated: bool = False
    pending: str = "none"
    agent: str | None = None
    reply_contains: tuple[str, ...] = ()
    reply_lacks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Flow:
    name: str
    title: str
    customer: str | None
    turns: tuple[Turn, ...]
    expect: Expected = field(default_factory=Expected)
    # Where it was read from, for messages: "built-in" or the file's path.
    source: str = "built-in"


_TOP_KEYS = {"title", "customer", "turns", "expect"}
_TURN_KEYS = {"say", "decide", "order", "reply_contains", "reply_lacks", "pending"}
_EXPECT_KEYS = {"refunds", "escalated", "pending", "agent", "reply_contains", "reply_lacks"}


class _Reader:
    """Reads one file's table, each problem said with the file and the key it is under."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, key: str, problem: str) -> FlowError:
        return FlowError(f"{self.where}: {key}: {problem}")

    def keys(self, table: Mapping[str, Any], allowed: set[str], at: str) -> None:
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.fail(
                f"{at}{unknown[0]}", f"unknown key; known here: {', '.join(sorted(allowed))}"
            )

    def text(self, table: Mapping[str, Any], key: str, at: str = "") -> str | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{at}{key}", "must be a non-empty string")
        return value

    def texts(self, table: Mapping[str, Any], key: str, at: str = "") -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(f"{at}{key}", "must be a list of non-empty strings")
        return tuple(value)

    def pending(self, table: Mapping[str, Any], at: str) -> str | None:
        value = self.text(table, "pending", at)
        if value is not None and value not in PENDING_KINDS:
            raise self.fail(f"{at}pending", f"must be one of {', '.join(PENDING_KINDS)}")
        return value

    def order_id(self, value: object, key: str) -> str:
        order_id = normalise_order_id(value)
        if not ORDER_ID_PATTERN.match(order_id):
            raise self.fail(key, f"{quoted(str(value))} is not an order id like ORD-001")
        return order_id


def parse_flow(name: str, text: str, source: str = "built-in") -> Flow:
    """The flow named `name` written in `text` (TOML); FlowError says what is wrong."""
    where = f"flow {name} ({source})" if source != "built-in" else f"flow {name}"
    reader = _Reader(where)
    if not FLOW_NAME.fullmatch(name):
        raise FlowError(
            f"{where}: the file name must be 1 to 40 lower-case letters, digits, _ or -, "
            "starting with a letter or a digit (it names the flow)"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FlowError(f"{where}: not valid TOML: {exc}") from None
    reader.keys(data, _TOP_KEYS, "")
    raw_turns = data.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise reader.fail("turns", "at least one [[turns]] table is needed")
    if len(raw_turns) > MAX_TURNS:
        raise reader.fail("turns", f"at most {MAX_TURNS} turns")
    turns = tuple(
        _turn(reader, raw, f"turns[{index}].") for index, raw in enumerate(raw_turns, start=1)
    )
    if turns[0].say is None:
        raise reader.fail("turns[1]", "the first turn is the customer's (`say`)")
    expect = data.get("expect", {})
    if not isinstance(expect, dict):
        raise reader.fail("expect", "must be a table ([expect])")
    return Flow(
        name=name,
        title=reader.text(data, "title") or name.replace("_", " "),
        customer=reader.text(data, "customer"),
        turns=turns,
        expect=_expected(reader, expect),
        source=source,
    )


def _turn(reader: _Reader, raw: object, at: str) -> Turn:
    if not isinstance(raw, dict):
        raise reader.fail(at.rstrip("."), "must be a table ([[turns]])")
    reader.keys(raw, _TURN_KEYS, at)
    say, decide = reader.text(raw, "say", at), reader.text(raw, "decide", at)
    if (say is None) == (decide is None):
        raise reader.fail(at.rstrip("."), "give either `say` (the customer) or `decide`")
    if decide is not None and decide not in DECISIONS:
        raise reader.fail(f"{at}decide", f"must be one of {', '.join(DECISIONS)}")
    order = raw.get("order")
    if order is not None and decide not in REFUND_OPTIONS:
        raise reader.fail(f"{at}order", "only a refund decision names an order")
    return Turn(
        say=say,
        decide=decide,
        order=reader.order_id(order, f"{at}order") if order is not None else None,
        reply_contains=reader.texts(raw, "reply_contains", at),
        reply_lacks=reader.texts(raw, "reply_lacks", at),
        pending=reader.pending(raw, at),
    )


def _expected(reader: _Reader, raw: Mapping[str, Any]) -> Expected:
    at = "expect."
    reader.keys(raw, _EXPECT_KEYS, at)
    refunds = raw.get("refunds", [])
    if not isinstance(refunds, list):
        raise reader.fail(f"{at}refunds", "must be a list of order ids ([] for none)")
    escalated = raw.get("escalated", False)
    if not isinstance(escalated, bool):
        raise reader.fail(f"{at}escalated", "must be true or false")
    agent = reader.text(raw, "agent", at)
    if agent is not None and agent not in AGENTS:
        raise reader.fail(f"{at}agent", f"must be one of {', '.join(AGENTS)}")
    return Expected(
        refunds=tuple(sorted(reader.order_id(r, f"{at}refunds") for r in refunds)),
        escalated=escalated,
        pending=reader.pending(raw, at) or "none",
        agent=agent,
        reply_contains=reader.texts(raw, "reply_contains", at),
        reply_lacks=reader.texts(raw, "reply_lacks", at),
    )


def _files_in(folder: Traversable) -> list[Traversable]:
    return sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(".toml") and entry.is_file()),
        key=lambda entry: entry.name,
    )


def builtin_flows() -> list[Flow]:
    """The flows that ship with ShopBot, by name."""
    folder = resources.files("agents.eval") / "flows"
    return [
        parse_flow(entry.name.removesuffix(".toml"), entry.read_text(encoding="utf-8"))
        for entry in _files_in(folder)
    ]


def flows_in(folder: Path) -> list[Flow]:
    """A shop's own flows: every `*.toml` file in `folder`."""
    if not folder.is_dir():
        raise FlowError(f"{folder}: not a folder of flow files (*.toml)")
    found = []
    for entry in _files_in(folder):
        path = folder / entry.name
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise FlowError(f"{path}: cannot be read: {exc}") from None
        found.append(parse_flow(entry.name.removesuffix(".toml"), text, str(path)))
    if not found:
        raise FlowError(f"{folder}: holds no flow files (*.toml)")
    return found


def load_flows(extra: Iterable[Path] = (), only: Iterable[str] = ()) -> list[Flow]:
    """The built-in flows and those in the `extra` folders, each name once; with `only`,
    just those named (in the order given)."""
    flows: dict[str, Flow] = {}
    for flow in [*builtin_flows(), *(f for folder in extra for f in flows_in(folder))]:
        if (earlier := flows.get(flow.name)) is not None:
            raise FlowError(
                f"flow {flow.name} is defined twice ({earlier.source} and {flow.source}); "
                "rename one of the files"
            )
        flows[flow.name] = flow
    wanted = list(dict.fromkeys(only))
    if not wanted:
        return list(flows.values())
    if unknown := [name for name in wanted if name not in flows]:
        raise FlowError(f"unknown flow {quoted(unknown[0])}; flows: {', '.join(flows)}")
    return [flows[name] for name in wanted]


__all__ = [
    "DECISIONS",
    "PENDING_KINDS",
    "Expected",
    "Flow",
    "FlowError",
    "Turn",
    "builtin_flows",
    "flows_in",
    "load_flows",
    "parse_flow",
]
