"""One call records a decision in the audit log and tells the UI about it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from agents.events import EngineEvent, to_wire
from agents.graph.context import ShopContext
from agents.graph.services import turn


def report(
    runtime: Runtime[ShopContext],
    event: EngineEvent | None = None,
    *,
    kind: str | None = None,
    agent: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> None:
    """Append an audit event of `kind` (if given) and stream `event` (if given) to the fronts."""
    if kind is not None:
        this = turn(runtime.context)
        this.audit.append(kind, thread_id=this.thread_id, agent=agent, detail=detail)
    if event is not None:
        runtime.stream_writer(to_wire(event))
