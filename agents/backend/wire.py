"""The backend's plain values as JSON, and back: what a ShopBot server's routes send
(agents/serving/routes.py) and the remote backend reads (agents/backend/remote.py).

One place for both directions, so the two sides cannot drift. A value read back is checked
only as far as building it needs: a server that sends something else fails one read with
`WireError`, named, instead of a screen full of `KeyError`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from agents.store.threads import ChatLine, ThreadInfo

# A URL's query, as httpx takes it.
Params = list[tuple[str, str | int | float | bool | None]]


class WireError(ValueError):
    """What the server sent is not what this version of ShopBot reads."""


def _unreadable(what: str, exc: Exception) -> WireError:
    return WireError(f"The server sent {what} this ShopBot cannot read ({exc}).")


def _fields(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise WireError(f"The server sent {type(data).__name__} where {what} belongs.")
    return data


def thread_info(data: object) -> ThreadInfo:
    got = _fields(data, "a conversation")
    try:
        return ThreadInfo(
            thread_id=str(got["thread_id"]),
            customer=got.get("customer"),
            title=str(got.get("title") or ""),
            created_at=str(got["created_at"]),
            updated_at=str(got["updated_at"]),
            active_agent=str(got["active_agent"]),
            status=got["status"],
            turns=int(got.get("turns") or 0),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(
            f"The server sent a conversation this ShopBot cannot read ({exc})."
        ) from exc


def thread_json(info: ThreadInfo) -> dict[str, Any]:
    return asdict(info)


def chat_line(data: object) -> ChatLine:
    got = _fields(data, "a transcript line")
    try:
        return ChatLine(
            id=int(got["id"]),
            thread_id=str(got["thread_id"]),
            ts=str(got["ts"]),
            role=got["role"],
            text=str(got["text"]),
            agent=got.get("agent"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(
            f"The server sent a transcript line this ShopBot cannot read ({exc})."
        ) from exc


def line_json(line: ChatLine) -> dict[str, Any]:
    return asdict(line)


def escalation(data: object) -> Any:
    from agents.store.escalations import Escalation

    got = _fields(data, "an escalation")
    try:
        return Escalation(
            thread_id=str(got["thread_id"]),
            since=str(got["since"]),
            agent=got.get("agent"),
            reason=str(got.get("reason") or ""),
        )
    except (KeyError, TypeError) as exc:
        raise _unreadable("an escalation", exc) from exc


def audit_event(data: object) -> Any:
    from agents.audit.log import AuditEvent

    got = _fields(data, "an audit event")
    detail = got.get("detail")
    try:
        return AuditEvent(
            id=int(got["id"]),
            ts=str(got["ts"]),
            thread_id=got.get("thread_id"),
            agent=got.get("agent"),
            kind=str(got["kind"]),
            detail=dict(detail) if isinstance(detail, Mapping) else {},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(
            f"The server sent an audit event this ShopBot cannot read ({exc})."
        ) from exc


def audit_query_params(query: Any) -> Params:
    """An `AuditQuery` as a URL's query (the kinds repeated)."""
    params: Params = [("kind", kind) for kind in query.kinds]
    for name in ("thread_id", "since", "until", "text"):
        value = getattr(query, name)
        if value is not None:
            params.append((name, str(value)))
    return params


def audit_query(params: Mapping[str, str], kinds: list[str]) -> Any:
    """The `AuditQuery` a URL's query stands for (`audit_query_params`, read back)."""
    from agents.audit.log import AuditQuery

    return AuditQuery(
        thread_id=params.get("thread_id"),
        kinds=tuple(kinds),
        since=params.get("since"),
        until=params.get("until"),
        text=params.get("text"),
    )


def approval_request(data: object) -> Any:
    from agents.events import ApprovalRequest

    got = _fields(data, "a decision")
    payload = got.get("payload")
    try:
        return ApprovalRequest(
            thread_id=str(got["thread_id"]),
            kind=got["kind"],
            options=tuple(str(option) for option in got["options"]),
            payload=dict(payload) if isinstance(payload, Mapping) else {},
            interrupt_id=str(got.get("interrupt_id") or ""),
        )
    except (KeyError, TypeError) as exc:
        raise _unreadable("a decision", exc) from exc


def request_json(request: Any) -> dict[str, Any]:
    return {
        "thread_id": request.thread_id,
        "kind": request.kind,
        "options": list(request.options),
        "payload": request.payload,
        "interrupt_id": request.interrupt_id,
    }
