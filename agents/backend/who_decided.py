"""Who took a decision another front was showing: the latest `approval_decided` of the
conversation in the audit log, read through any backend. Said when a dialog closes because
the decision was taken elsewhere, and when a second decision on it is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agents.errors import NothingPending

if TYPE_CHECKING:
    from agents.audit.log import AuditEvent, AuditQuery

AuditPage = Callable[..., Awaitable[list["AuditEvent"]]]


async def latest_decision(
    audit_page: AuditPage, thread_id: str, request_id: str | None = None
) -> str | None:
    """'approved by lee (server), 2026-12-02 10:12 UTC' for the conversation's latest
    decision (of `request_id`, when given); None when there is none, or it cannot be read."""
    from agents.audit.decisions import earlier_decision
    from agents.audit.log import AuditQuery

    query: AuditQuery = AuditQuery(thread_id=thread_id, kinds=("approval_decided",))
    try:
        found = await audit_page(query, limit=1)
    except Exception:  # (only a better message: never a reason to fail)
        return None
    if not found:
        return None
    detail: dict[str, Any] = found[0].detail
    if request_id is not None and detail.get("request_id") not in (None, request_id):
        return None
    return earlier_decision({**detail, "at": found[0].ts, "thread_id": None})


async def refused_naming_who(
    thread_id: str, events: AsyncIterator[Any], audit_page: AuditPage
) -> AsyncIterator[Any]:
    """`events` of a decision; refused because nothing waits any more, with who decided."""
    try:
        try:
            first = await anext(events)
        except NothingPending as exc:
            if (who := await latest_decision(audit_page, thread_id)) is None:
                raise
            raise NothingPending(f"{str(exc).rstrip('.')}: it was {who}.") from None
        except StopAsyncIteration:
            return
        yield first
        async for event in events:
            yield event
    finally:
        if (aclose := getattr(events, "aclose", None)) is not None:
            await aclose()
