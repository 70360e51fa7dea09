"""The backend's plain values as JSON, and back: what a ShopBot server's routes send
(agents/serving/routes.py) and the remote backend reads (agents/backend/remote.py).

One place for both directions, so the two sides cannot drift. A value read back is checked
only as far as building it needs: a server that sends something else fails one read with
`WireError`, named, instead of a screen full of `KeyError`s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, TypeVar

from agents.store.threads import ChatLine, ThreadInfo

T = TypeVar("T")

# A URL's query, as httpx takes it.
Params = list[tuple[str, str | int | float | bool | None]]


class WireError(ValueError):
    """What the server sent is not what this version of ShopBot reads."""


def _fields(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise WireError(f"The server sent {type(data).__name__} where {what} belongs.")
    return data


def _built(what: str, data: object, build: Callable[[Mapping[str, Any]], T]) -> T:
    """`build` on the fields of `data`, which the server sent as `what`."""
    got = _fields(data, what)
    try:
        return build(got)
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"The server sent {what} this ShopBot cannot read ({exc}).") from exc


def thread_info(data: object) -> ThreadInfo:
    return _built(
        "a conversation",
        data,
        lambda got: ThreadInfo(
            thread_id=str(got["thread_id"]),
            customer=got.get("customer"),
            title=str(got.get("title") or ""),
            created_at=str(got["created_at"]),
            updated_at=str(got["updated_at"]),
            active_agent=str(got["active_agent"]),
            status=got["status"],
            turns=int(got.get("turns") or 0),
        ),
    )


def thread_json(info: ThreadInfo) -> dict[str, Any]:
    return asdict(info)


def chat_line(data: object) -> ChatLine:
    return _built(
        "a transcript line",
        data,
        lambda got: ChatLine(
            id=int(got["id"]),
            thread_id=str(got["thread_id"]),
            ts=str(got["ts"]),
            role=got["role"],
            text=str(got["text"]),
            agent=got.get("agent"),
        ),
    )


def line_json(line: ChatLine) -> dict[str, Any]:
    return asdict(line)


def escalation(data: object) -> Any:
    from agents.store.escalations import Escalation

    return _built(
        "an escalation",
        data,
        lambda got: Escalation(
            thread_id=str(got["thread_id"]),
            since=str(got["since"]),
            agent=got.get("agent"),
            reason=str(got.get("reason") or ""),
        ),
    )


def audit_event(data: object) -> Any:
    from agents.audit.log import AuditEvent

    return _built(
        "an audit event",
        data,
        lambda got: AuditEvent(
            id=int(got["id"]),
            ts=str(got["ts"]),
            thread_id=got.get("thread_id"),
            agent=got.get("agent"),
            kind=str(got["kind"]),
            detail=_mapping(got.get("detail")),
        ),
    )


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


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

    return _built(
        "a decision",
        data,
        lambda got: ApprovalRequest(
            thread_id=str(got["thread_id"]),
            kind=got["kind"],
            options=tuple(str(option) for option in got["options"]),
            payload=_mapping(got.get("payload")),
            interrupt_id=str(got.get("interrupt_id") or ""),
        ),
    )


def request_json(request: Any) -> dict[str, Any]:
    return {
        "thread_id": request.thread_id,
        "kind": request.kind,
        "options": list(request.options),
        "payload": request.payload,
        "interrupt_id": request.interrupt_id,
    }
