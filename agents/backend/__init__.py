"""The one interface ShopBot's fronts (the TUI, the `shopbot` command) use: a `Backend`
(protocol.py; `LocalBackend` runs ShopBot in this process) and the plain values it takes and
returns, with the rules for showing them. The import contracts in pyproject.toml keep the
fronts to this module.

Light to import (no LangChain, no LangGraph): a front can paint first. The turn's events and
the audit log's records are dataclasses that take 20-40 ms to create, and the first frame
needs none of them: they load on first use (`backend.outcome(...)`), and a front names them
before that only for types (TYPE_CHECKING); tests/tui/test_tui_chat.py checks that
`shopbot`'s modules load none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agents.backend.protocol import Backend
from agents.errors import BusyElsewhere, InputError, NothingPending
from agents.graph.replies import TURN_STOPPED_NOTE
from agents.logging_setup import configure_logging
from agents.names import AGENT_TITLES, AGENTS, DEFAULT_AGENT, STEP_LABELS, Step
from agents.reviewer import Reviewer
from agents.safety.redaction import redact
from agents.safety.text import (
    MAX_ERROR_CHARS,
    MessageRejected,
    person_name,
    quoted,
    safe_json,
    undecodable_bytes,
    visible,
    visible_line,
)
from agents.settings import OFFLINE_MODEL_LABEL, Settings
from agents.store.damage import diagnose_storage, failure_text
from agents.store.sqlite import StorageError
from agents.store.threads import ChatLine, ThreadInfo, agent_read_only, validate_thread_id

if TYPE_CHECKING:
    from agents.audit.decisions import earlier_decision
    from agents.audit.log import AUDIT_KINDS, AuditEvent, AuditQuery, normalise_ts
    from agents.audit.log import MAX_PAGE as MAX_AUDIT_PAGE
    from agents.backend.local import LocalBackend
    from agents.backend.opening import open_backend
    from agents.backend.who_decided import latest_decision
    from agents.errors import ServerUnreachable
    from agents.eval.flow import Flow, load_flows
    from agents.eval.metrics import median, p95
    from agents.eval.results import FlowResult, SuiteResult, TryResult
    from agents.eval.runner import offline_calls, run_suite
    from agents.events import (
        AgentChanged,
        ApprovalRequest,
        EngineEvent,
        GateChecked,
        ReplyDone,
        Retrying,
        StepChanged,
        TokenDelta,
        TurnFailed,
        TurnFinished,
        TurnResult,
        note_for,
        outcome,
        retry_notice,
    )
    from agents.store.escalations import Escalation, escalation_handled_note

_ON_FIRST_USE = {
    "LocalBackend": "agents.backend.local",
    "open_backend": "agents.backend.opening",
    "latest_decision": "agents.backend.who_decided",
    "ServerUnreachable": "agents.errors",
    **dict.fromkeys(
        ("AUDIT_KINDS", "MAX_AUDIT_PAGE", "AuditEvent", "AuditQuery", "normalise_ts"),
        "agents.audit.log",
    ),
    "earlier_decision": "agents.audit.decisions",
    # `shopbot eval` (agents/eval): scripted flows through the engine, and their results.
    **dict.fromkeys(("Flow", "load_flows"), "agents.eval.flow"),
    **dict.fromkeys(("median", "p95"), "agents.eval.metrics"),
    **dict.fromkeys(("FlowResult", "SuiteResult", "TryResult"), "agents.eval.results"),
    **dict.fromkeys(("offline_calls", "run_suite"), "agents.eval.runner"),
    **dict.fromkeys(("Escalation", "escalation_handled_note"), "agents.store.escalations"),
    **dict.fromkeys(
        (
            "AgentChanged",
            "ApprovalRequest",
            "EngineEvent",
            "GateChecked",
            "ReplyDone",
            "Retrying",
            "StepChanged",
            "TokenDelta",
            "TurnFailed",
            "TurnFinished",
            "TurnResult",
            "note_for",
            "outcome",
            "retry_notice",
        ),
        "agents.events",
    ),
}
# Names given here differently from their module.
_NAMED_THERE = {"MAX_AUDIT_PAGE": "MAX_PAGE"}


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _NAMED_THERE.get(name, name))
    globals()[name] = value
    return value


__all__ = [
    "AGENTS",
    "AGENT_TITLES",
    "AUDIT_KINDS",
    "DEFAULT_AGENT",
    "MAX_AUDIT_PAGE",
    "MAX_ERROR_CHARS",
    "OFFLINE_MODEL_LABEL",
    "STEP_LABELS",
    "TURN_STOPPED_NOTE",
    "AgentChanged",
    "ApprovalRequest",
    "AuditEvent",
    "AuditQuery",
    "Backend",
    "BusyElsewhere",
    "ChatLine",
    "EngineEvent",
    "Escalation",
    "Flow",
    "FlowResult",
    "GateChecked",
    "InputError",
    "LocalBackend",
    "MessageRejected",
    "NothingPending",
    "ReplyDone",
    "Retrying",
    "Reviewer",
    "ServerUnreachable",
    "Settings",
    "Step",
    "StepChanged",
    "StorageError",
    "SuiteResult",
    "ThreadInfo",
    "TokenDelta",
    "TryResult",
    "TurnFailed",
    "TurnFinished",
    "TurnResult",
    "agent_read_only",
    "configure_logging",
    "diagnose_storage",
    "earlier_decision",
    "escalation_handled_note",
    "failure_text",
    "latest_decision",
    "load_flows",
    "median",
    "normalise_ts",
    "note_for",
    "offline_calls",
    "open_backend",
    "outcome",
    "p95",
    "person_name",
    "quoted",
    "redact",
    "retry_notice",
    "run_suite",
    "safe_json",
    "undecodable_bytes",
    "validate_thread_id",
    "visible",
    "visible_line",
]
