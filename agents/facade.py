"""The one door to ShopBot's engine for its fronts, the TUI and the `shopbot` command.

Light to import (no LangChain, no LangGraph): a front can paint first. `ShopBotEngine`, the
part that runs turns, is imported on first use, about a second of imports; do that off the
event loop (`await asyncio.to_thread(load_engine)`). The rest is what a front needs to
show and read: settings, the events a turn streams, the records (threads, transcripts, the
audit log) and the rules for showing untrusted text.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from agents.store.damage import (
    diagnose_storage,
    failure_text,
    file_failure_text,
)
from agents.store.database import Location, checked_database, location_of
from agents.store.home import checked_home
from agents.store.sqlite import StorageError, is_busy
from agents.store.threads import (
    ChatLine,
    ThreadInfo,
    ThreadRegistry,
    agent_read_only,
    validate_thread_id,
)

if TYPE_CHECKING:
    from agents.audit.decisions import earlier_decision
    from agents.audit.log import AUDIT_KINDS, AuditEvent, AuditLog, AuditQuery, normalise_ts
    from agents.audit.log import MAX_PAGE as MAX_AUDIT_PAGE
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
    from agents.runner.engine import ShopBotEngine
    from agents.store.escalations import Escalation, escalation_handled_note, mark_handled

# Imported on first use: the events' and the audit log's dataclasses take 20-40 ms to create,
# and the first frame needs none of them. A front that starts before its engine names them
# only for types (TYPE_CHECKING) or reads them when it uses them (`facade.outcome(...)`);
# tests/tui/test_tui_chat.py checks that `shopbot`'s modules load none of them.
_ON_FIRST_USE = {
    **dict.fromkeys(
        ("AUDIT_KINDS", "MAX_AUDIT_PAGE", "AuditEvent", "AuditLog", "AuditQuery", "normalise_ts"),
        "agents.audit.log",
    ),
    "earlier_decision": "agents.audit.decisions",
    # `shopbot eval` (agents/eval): scripted flows, their runner and their results.
    **dict.fromkeys(("Flow", "load_flows"), "agents.eval.flow"),
    **dict.fromkeys(("median", "p95"), "agents.eval.metrics"),
    **dict.fromkeys(("FlowResult", "SuiteResult", "TryResult"), "agents.eval.results"),
    **dict.fromkeys(("offline_calls", "run_suite"), "agents.eval.runner"),
    **dict.fromkeys(
        ("Escalation", "escalation_handled_note", "mark_handled"), "agents.store.escalations"
    ),
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


# Names the facade gives differently from their module.
_NAMED_THERE = {"MAX_AUDIT_PAGE": "MAX_PAGE"}


def load_engine() -> type[ShopBotEngine]:
    """The engine class, importing LangChain and LangGraph if that has not happened yet."""
    from agents.runner.engine import ShopBotEngine

    return ShopBotEngine


def __getattr__(name: str) -> Any:
    # `from agents.facade import ShopBotEngine` works, and costs the import only then.
    if name == "ShopBotEngine":
        return load_engine()
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
    "AuditLog",
    "AuditQuery",
    "BusyElsewhere",
    "ChatLine",
    "EngineEvent",
    "Escalation",
    "Flow",
    "FlowResult",
    "GateChecked",
    "InputError",
    "Location",
    "MessageRejected",
    "NothingPending",
    "ReplyDone",
    "Retrying",
    "Reviewer",
    "Settings",
    "ShopBotEngine",
    "Step",
    "StepChanged",
    "StorageError",
    "SuiteResult",
    "ThreadInfo",
    "ThreadRegistry",
    "TokenDelta",
    "TryResult",
    "TurnFailed",
    "TurnFinished",
    "TurnResult",
    "agent_read_only",
    "checked_database",
    "checked_home",
    "configure_logging",
    "diagnose_storage",
    "earlier_decision",
    "escalation_handled_note",
    "failure_text",
    "file_failure_text",
    "is_busy",
    "load_engine",
    "load_flows",
    "location_of",
    "mark_handled",
    "median",
    "normalise_ts",
    "note_for",
    "offline_calls",
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
