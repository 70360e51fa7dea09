"""What a ShopBot server answers beside LangGraph's own API (`langgraph.json`: `http.app`):
the reads and writes of ShopBot's stores a front needs and no graph run makes — the
conversation lists, transcripts, the decision a conversation waits for as it stands, marking
an escalation handled, the audit log. The remote backend (agents/backend/remote.py) calls
them, so an operator needs only the server's URL and a token: no database credentials.

The server authenticates these routes as it does its own (`enable_custom_route_auth`), and
who acts is the operator the token names (`request.user`), never a name sent. Every store
call runs off the event loop (the server refuses blocking calls on it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from langgraph_sdk import get_client
from langgraph_sdk.errors import APIStatusError, NotFoundError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agents.audit.decisions import refund_decisions
from agents.audit.log import MAX_PAGE, AuditLog
from agents.backend import wire
from agents.graph.replies import TURN_STOPPED_NOTE
from agents.graph.services import process_services
from agents.names import DEFAULT_AGENT
from agents.reviewer import Reviewer
from agents.runner.approval_now import as_it_stands
from agents.settings import Settings
from agents.store.database import checked_database
from agents.store.escalations import mark_handled
from agents.store.threads import ThreadRegistry, validate_thread_id

T = TypeVar("T")

# A list asks for at most this many conversations at once (a front pages nothing further).
MAX_THREADS = 10_000


class _Stores:
    """The registry and the audit log these routes read: opened once, on first use, in a
    worker thread (the graph's services keep their own connections)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._opened: tuple[ThreadRegistry, AuditLog] | None = None

    def get(self) -> tuple[ThreadRegistry, AuditLog]:
        with self._lock:
            if self._opened is None:
                settings = Settings.from_env()
                where = checked_database(settings)
                self._opened = (ThreadRegistry(where), AuditLog(where, secrets=settings.secrets()))
            return self._opened


_STORES = _Stores()


async def _off_loop(work: Callable[[ThreadRegistry, AuditLog], T]) -> T:
    return await asyncio.to_thread(lambda: work(*_STORES.get()))


def operator(request: Request) -> Reviewer:
    """Who the request's token names (the server authenticated it before this runs)."""
    identity = getattr(request.user, "identity", None)
    if not isinstance(identity, str) or not identity.strip():
        # (Only without `enable_custom_route_auth`: refuse rather than act as nobody.)
        raise PermissionError("This request is not an authenticated operator's.")
    return Reviewer(" ".join(identity.split())[:64], "server")


class _Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def _thread_id(request: Request) -> str:
    try:
        return validate_thread_id(request.path_params["thread_id"])
    except ValueError as exc:
        raise _Refused(422, str(exc)) from None


def _int(request: Request, name: str, *, low: int, high: int) -> int | None:
    given = request.query_params.get(name)
    if given is None:
        return None
    try:
        value = int(given)
    except ValueError:
        raise _Refused(422, f"{name} must be a whole number, got {given!r}.") from None
    if not low <= value <= high:
        raise _Refused(422, f"{name} must be between {low} and {high}, got {value}.")
    return value


def _route(
    handler: Callable[[Request], Awaitable[Any]],
) -> Callable[[Request], Awaitable[Response]]:
    """`handler`'s value as JSON; a refusal as `{"detail": ...}` with its status, as the
    server's own routes answer."""

    async def answer(request: Request) -> Response:
        try:
            return JSONResponse(await handler(request))
        except _Refused as exc:
            return JSONResponse({"detail": str(exc)}, status_code=exc.status)
        except PermissionError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=403)

    return answer


# --- who is asking -------------------------------------------------------------------------


async def me(request: Request) -> dict[str, Any]:
    return {"operator": operator(request).name, "model": Settings.from_env().model_label}


# --- conversations -------------------------------------------------------------------------


async def threads(request: Request) -> list[dict[str, Any]]:
    limit = _int(request, "limit", low=1, high=MAX_THREADS)
    matching = request.query_params.get("matching", "")
    among = request.query_params.getlist("among") or None
    if request.query_params.get("among_none") == "1":
        among = []
    listed = await _off_loop(
        lambda registry, _: registry.list(limit=limit, matching=matching, among=among)
    )
    return [wire.thread_json(info) for info in listed]


async def count_threads(request: Request) -> dict[str, int]:
    return {"count": await _off_loop(lambda registry, _: registry.count())}


async def waiting(request: Request) -> list[dict[str, Any]]:
    listed = await _off_loop(lambda registry, _: registry.with_status("awaiting_approval"))
    return [wire.thread_json(info) for info in listed]


async def escalations(request: Request) -> list[dict[str, Any]]:
    listed = await _off_loop(lambda registry, _: registry.escalations())
    return [item.to_json() for item in listed]


async def thread(request: Request) -> dict[str, Any]:
    thread_id = _thread_id(request)
    info = await _off_loop(lambda registry, _: registry.get(thread_id))
    if info is None:
        raise _Refused(404, f"Unknown thread {thread_id!r}.")
    return wire.thread_json(info)


async def lines(request: Request) -> list[dict[str, Any]]:
    thread_id = _thread_id(request)
    limit = _int(request, "limit", low=1, high=1_000_000)
    said = await _off_loop(lambda registry, _: registry.lines(thread_id, limit=limit))
    return [wire.line_json(line) for line in said]


async def handled(request: Request) -> dict[str, Any]:
    thread_id = _thread_id(request)
    reviewer = operator(request)
    closed = await _off_loop(lambda registry, log: mark_handled(registry, log, thread_id, reviewer))
    return {"escalation": closed.to_json() if closed is not None else None}


async def stop(request: Request) -> dict[str, Any]:
    """Stop a run of the conversation (a person pressed Stop in a remote front): cancelled on
    the server, and said in its transcript and audit log as the in-process engine says it."""
    thread_id = _thread_id(request)
    try:
        run_id = str((await request.json())["run_id"])
    except (ValueError, KeyError, TypeError):
        raise _Refused(422, 'Say which run to stop: {"run_id": ...}.') from None
    reviewer = operator(request)
    client = get_client()  # (langgraph-api's own, in process)
    try:
        await client.runs.cancel(thread_id, run_id, wait=True)
        run = await client.runs.get(thread_id, run_id)
        state = await client.threads.get_state(thread_id)
    except NotFoundError:
        raise _Refused(404, f"Thread {thread_id} has no run {run_id}.") from None
    except APIStatusError as exc:
        raise _Refused(exc.status_code, str(exc)) from None
    if run.get("status") != "interrupted":
        return {"stopped": False, "status": run.get("status")}
    values = state.get("values")
    agent = values.get("active_agent") if isinstance(values, dict) else None
    await asyncio.to_thread(_record_stop, thread_id, str(agent or DEFAULT_AGENT), reviewer)
    return {"stopped": True, "status": "interrupted"}


def _record_stop(thread_id: str, agent: str, reviewer: Reviewer) -> None:
    recorder = process_services().audit
    recorder.line(thread_id, "note", TURN_STOPPED_NOTE)
    recorder.finish(thread_id, status="error", agent=agent)
    recorder.append(
        "turn_finished",
        thread_id=thread_id,
        agent=agent,
        detail={"status": "stopped", "stopped_by": reviewer.name, "via": reviewer.via},
    )
    recorder.flush()


# --- a decision as it stands ---------------------------------------------------------------


async def as_it_stands_now(request: Request) -> dict[str, Any]:
    """The request sent, read again from the ledger and the audit log, and whether the
    operator asking may decide it (their refund limit)."""
    try:
        asked = wire.approval_request(await request.json())
    except (ValueError, wire.WireError) as exc:
        raise _Refused(422, f"Not a decision: {exc}") from None
    reviewer = operator(request)
    return await asyncio.to_thread(_as_it_stands, asked, reviewer)


def _as_it_stands(asked: Any, reviewer: Reviewer) -> dict[str, Any]:
    services = process_services()
    _, log = _STORES.get()
    request = asked
    if asked.kind == "refund_approval":
        order_id = str(asked.payload.get("order_id"))
        paid = services.shop.refund_for(order_id)
        request = as_it_stands(
            asked,
            paid_reference=paid.reference if paid else None,
            decided_before=refund_decisions(log, order_id),
        )
    problem = services.limits.may_not_decide(
        {**request.payload, "kind": request.kind}, reviewer.name
    )
    return {"request": wire.request_json(request), "may_not_decide": problem}


# --- the audit log -------------------------------------------------------------------------


def _query(request: Request) -> Any:
    return wire.audit_query(request.query_params, request.query_params.getlist("kind"))


async def audit_page(request: Request) -> list[dict[str, Any]]:
    query = _query(request)
    limit = _int(request, "limit", low=1, high=MAX_PAGE) or 100
    before_id = _int(request, "before_id", low=0, high=2**63 - 1)
    events = await _off_loop(lambda _, log: log.page(query, limit=limit, before_id=before_id))
    return [event.to_json() for event in events]


async def audit_count(request: Request) -> dict[str, int]:
    query = _query(request)
    return {"count": await _off_loop(lambda _, log: log.count(query))}


async def audit_threads(request: Request) -> list[str]:
    return await _off_loop(lambda _, log: log.thread_ids())


def _routes() -> list[Route]:
    get, post = partial(Route, methods=["GET"]), partial(Route, methods=["POST"])
    return [
        get("/shopbot/me", _route(me)),
        get("/shopbot/threads", _route(threads)),
        get("/shopbot/threads-count", _route(count_threads)),
        get("/shopbot/waiting", _route(waiting)),
        get("/shopbot/escalations", _route(escalations)),
        get("/shopbot/threads/{thread_id}", _route(thread)),
        get("/shopbot/threads/{thread_id}/lines", _route(lines)),
        post("/shopbot/threads/{thread_id}/handled", _route(handled)),
        post("/shopbot/threads/{thread_id}/stop", _route(stop)),
        post("/shopbot/decisions/as-it-stands", _route(as_it_stands_now)),
        get("/shopbot/audit", _route(audit_page)),
        get("/shopbot/audit/count", _route(audit_count)),
        get("/shopbot/audit/threads", _route(audit_threads)),
    ]


app = Starlette(routes=_routes())

__all__ = ["app", "operator"]
