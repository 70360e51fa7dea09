"""The backend that asks a ShopBot server (`shopbot --server URL`): the graph runs there,
driven through `langgraph-sdk`; the lists, transcripts, decisions as they stand and the audit
log come from the server's own routes (agents/serving/routes.py). The operator needs the
server's URL and a token, nothing else: no database, no model key.

What is the same as in process: the events of a turn (the graph streams them as JSON,
`from_wire` makes them `EngineEvent`s), the refusals (the server's 409/403/422 become the
same `InputError`s, in the server's words), and who decides (the server's authenticated
operator, never a name sent from here).

A connection that fails is said in one line naming the server, and a read is tried again a
few times first; a run is created once (a second try might send the message twice), and a
stream cut mid-turn reconnects (`stream_resumable`) before the turn is given up as lost on
this side (the server carries on with it).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Collection
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar
from urllib.parse import urlsplit

import httpx
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError, NotFoundError

from agents.backend import wire
from agents.backend.draft_file import DraftFile
from agents.backend.who_decided import latest_decision
from agents.errors import (
    BusyElsewhere,
    DecisionPending,
    InputError,
    NotAuthorised,
    NothingPending,
    ServerUnreachable,
)
from agents.events import (
    AgentChanged,
    ApprovalRequested,
    RefundNotCarriedOut,
    RefundPaid,
    TokenDelta,
    TurnFailed,
    TurnFinished,
    TurnResult,
    from_wire,
    request_from_interrupt,
)
from agents.names import DEFAULT_AGENT
from agents.reviewer import Reviewer
from agents.runner.run_watch import RunWatch
from agents.safety.redaction import register_secret
from agents.store.threads import validate_thread_id

if TYPE_CHECKING:
    from agents.audit.log import AuditEvent, AuditQuery
    from agents.events import ApprovalRequest, EngineEvent
    from agents.store.escalations import Escalation
    from agents.store.threads import ChatLine, ThreadInfo

log = logging.getLogger("shopbot.remote")

T = TypeVar("T")
GRAPH = "shopbot"
# A read that could not reach the server is tried again after these pauses (seconds).
READ_RETRIES = (0.25, 1.0, 2.0)
# What a person waits at most for one answer before being told the server does not answer.
# A turn's stream may go quiet while the model thinks; a connection is made in seconds.
TIMEOUT = httpx.Timeout(30.0, connect=5.0, read=120.0)


def server_thread_id() -> str:
    """A new conversation's id on a server: LangGraph's servers name threads by UUID."""
    return str(uuid.uuid4())


class RemoteBackend:
    """`RemoteBackend(url, token, home=..., via="app")`; `token` is sent as a bearer token
    (None: a server without operator tokens, as `langgraph dev` on one's own machine)."""

    def __init__(self, url: str, token: str | None, *, home: Path, via: str) -> None:
        self.url = url.rstrip("/")
        if token:
            # Redacted from everything ShopBot writes or shows, as the engine does its keys.
            register_secret(token)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # The SDK's client, on an httpx client of our own: `get_client` retries a refused
        # connection five times with backoff (15 s before a person hears of it) and sends
        # any LANGSMITH_API_KEY of the environment to the server; the tries here are ours.
        self._client = LangGraphClient(
            httpx.AsyncClient(
                base_url=self.url,
                transport=httpx.AsyncHTTPTransport(retries=0),
                timeout=TIMEOUT,
                headers=headers,
            )
        )
        self._via = via
        self._operator: str | None = None
        self._model = "on the server"
        self._drafts = DraftFile(home / "server-drafts.json", self.url)
        # Per conversation this front runs a turn of: the task reading it, its run, its watch.
        self._running: dict[str, tuple[asyncio.Task[Any], list[str], RunWatch, bool]] = {}
        self._limits: dict[str, str | None] = {}  # request_id -> why the operator may not
        self._cancels: set[asyncio.Task[None]] = set()

    # --- the backend's own ---------------------------------------------------------------

    @property
    def model_label(self) -> str:
        return self._model

    @property
    def reviewer(self) -> Reviewer:
        # (Who the server says the token is; the server records it, not this.)
        return Reviewer(self._operator or "the server's operator", "server")

    def new_thread_id(self) -> str:
        return server_thread_id()

    async def start(self) -> None:
        me = await self._read(lambda: self._client.http.get("/shopbot/me"))
        self._operator = str(me.get("operator") or "") or None
        self._model = f"{me.get('model') or 'unknown model'} on {urlsplit(self.url).netloc}"

    async def close(self) -> None:
        await self.close_pending_stops()
        await self._client.aclose()

    async def close_pending_stops(self) -> None:
        """Wait for the stops asked of the server to be answered (the app waits as it closes)."""
        if self._cancels:
            await asyncio.gather(*self._cancels, return_exceptions=True)

    async def describe_failure(self, error: BaseException) -> str:
        return self._said(error)

    def _said(self, error: BaseException) -> str:
        if isinstance(error, InputError | ServerUnreachable):
            return str(error)
        if isinstance(error, APIStatusError):
            return f"The ShopBot server at {self.url} refused: {_detail(error)}"
        return f"The ShopBot server at {self.url} failed: {type(error).__name__}: {error}"

    # --- talking to the server -----------------------------------------------------------

    def _unreachable(self, exc: BaseException) -> ServerUnreachable:
        why = "it did not answer in time" if isinstance(exc, httpx.TimeoutException) else exc
        return ServerUnreachable(
            f"The ShopBot server at {self.url} cannot be reached ({why}). Nothing typed is "
            "lost; try again once it is back."
        )

    async def _read(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call`, tried again while the server cannot be reached; refusals as they came."""
        for pause in (*READ_RETRIES, None):
            try:
                return await call()
            except APIStatusError as exc:
                if exc.status_code in (401, 403):
                    raise InputError(
                        f"The ShopBot server at {self.url} refused this operator: "
                        f"{_detail(exc)} (SHOPBOT_SERVER_TOKEN)"
                    ) from None
                if exc.status_code < 500 or pause is None:
                    raise
                failure: BaseException = exc
            except httpx.TransportError as exc:
                failure = exc
            if pause is None:
                break
            log.warning("the server at %s failed (%s); trying again", self.url, failure)
            await asyncio.sleep(pause)
        raise self._unreachable(failure)

    async def _get(self, path: str, **params: Any) -> Any:
        return await self._read(lambda: self._client.http.get(path, params=params or None))

    # --- a turn --------------------------------------------------------------------------

    def _thread_id(self, thread_id: str) -> str:
        try:
            validate_thread_id(thread_id)
            uuid.UUID(thread_id)
        except ValueError:
            raise InputError(
                f"A ShopBot server names its conversations by UUID; {thread_id!r} is not one "
                "(`shopbot threads` lists them)."
            ) from None
        return thread_id

    async def send(
        self, thread_id: str, text: str, *, customer: str | None = None
    ) -> AsyncIterator[EngineEvent]:
        thread_id = self._thread_id(thread_id)
        agent = await self.active_agent(thread_id)
        run: dict[str, Any] = {"input": {"messages": [{"role": "user", "content": text}]}}
        if customer:
            run["context"] = {"customer": customer}
        async for event in self._run(thread_id, agent, run, paying=False):
            yield event

    async def decide(
        self, thread_id: str, decision: str, *, request_id: str | None
    ) -> AsyncIterator[EngineEvent]:
        thread_id = self._thread_id(thread_id)
        if not isinstance(decision, str) or not isinstance(request_id, str | None):
            raise InputError("A decision is text.")
        agent = await self.active_agent(thread_id)
        answer: Any = (
            decision if request_id is None else {"decision": decision, "request_id": request_id}
        )
        run = {"command": {"resume": answer}}
        async for event in self._run(thread_id, agent, run, paying=decision == "approve"):
            yield event

    async def _run(
        self, thread_id: str, agent: str, run: dict[str, Any], *, paying: bool
    ) -> AsyncIterator[EngineEvent]:
        task = asyncio.current_task()
        assert task is not None
        run_ids: list[str] = []
        watch = RunWatch(agent)
        self._running[thread_id] = (task, run_ids, watch, paying)
        try:
            async with aclosing(await self._opened(thread_id, run, run_ids)) as events:
                yield AgentChanged(agent=agent)
                async for event in events:
                    if not isinstance(event, TokenDelta):
                        watch.sees(event)
                        if isinstance(event, RefundPaid | RefundNotCarriedOut | TurnFailed):
                            # Paid, or not: past the payment either way.
                            self._running[thread_id] = (task, run_ids, watch, False)
                    yield event
        except asyncio.CancelledError:
            if run_ids:
                self._cancel_later(thread_id, run_ids[-1])
            raise
        finally:
            self._running.pop(thread_id, None)
        result = await self._result(thread_id, watch)
        if result.pending is not None:
            yield ApprovalRequested(result.pending)
        yield TurnFinished(result)

    async def _opened(
        self, thread_id: str, run: dict[str, Any], run_ids: list[str]
    ) -> AsyncGenerator[EngineEvent, None]:
        """The run's stream, its first event read: a run the server refuses is refused here
        as in process, before the turn shows as begun (its message kept in the box). A
        connection that could not be made is tried again: nothing was sent on it."""
        for pause in (*READ_RETRIES, None):
            events = self._streamed(thread_id, run, run_ids)
            try:
                first = await anext(events, None)
            except _NotConnected as exc:
                await events.aclose()
                if pause is None:
                    raise self._unreachable(exc.cause) from None
                log.warning("the server at %s cannot be reached (%s); trying again", self.url, exc)
                await asyncio.sleep(pause)
                continue
            return _then(first, events)
        raise AssertionError("unreachable")  # (the last pause is None)

    async def _streamed(
        self, thread_id: str, run: dict[str, Any], run_ids: list[str]
    ) -> AsyncGenerator[EngineEvent, None]:
        """The run's events as the server streams them; a failure of the server or of the
        connection mid-turn as a `TurnFailed`, a refusal before the run as its error."""
        stream = self._client.runs.stream(
            thread_id,
            GRAPH,
            **run,
            stream_mode="custom",
            stream_subgraphs=True,
            multitask_strategy="reject",
            if_not_exists="create",
            stream_resumable=True,
            on_run_created=lambda meta: run_ids.append(str(meta["run_id"])),
        )
        try:
            async for part in stream:
                if part.event == "error":
                    yield TurnFailed(kind="internal", message=_server_error(part.data))
                elif part.event.startswith("custom") and (event := from_wire(part.data)):
                    yield event
        except APIStatusError as exc:
            if run_ids:
                raise
            raise await self._refusal(thread_id, exc) from None
        except httpx.ConnectError as exc:
            if not run_ids:  # (no connection, no run: the message was not sent)
                raise _NotConnected(exc) from None
            yield self._lost(exc)
        except httpx.TransportError as exc:
            if not run_ids:  # (the run may have been created: not sent again)
                raise self._unreachable(exc) from None
            yield self._lost(exc)

    def _lost(self, exc: BaseException) -> TurnFailed:
        return TurnFailed(
            kind="provider",
            message=f"The connection to the ShopBot server at {self.url} was lost mid-turn "
            f"({exc}); the server carries on with it: open the conversation again to see how "
            "it ended.",
        )

    async def _result(self, thread_id: str, watch: RunWatch) -> TurnResult:
        """How the turn ended, as the server stored it."""
        pending = await self.pending_decision(thread_id)
        return watch.result(thread_id, agent=await self.active_agent(thread_id), pending=pending)

    async def _refusal(self, thread_id: str, exc: APIStatusError) -> Exception:
        """The server refused to create the run: the same errors the engine raises."""
        detail = _detail(exc)
        if exc.status_code in (401,):
            return InputError(f"The ShopBot server at {self.url} refused this operator: {detail}")
        if exc.status_code == 409:
            if "has no decision pending" in detail:
                return NothingPending(await self._who_decided(thread_id, detail))
            if "busy" in detail or "answering" in detail or "inflight" in detail.lower():
                return BusyElsewhere(detail)
            pending = await self.pending_decision(thread_id)
            if pending is not None:
                if "another decision" in detail:
                    detail = await self._who_decided(thread_id, detail)
                return DecisionPending(detail, pending)
            return BusyElsewhere(detail)
        if exc.status_code == 403:
            pending = await self.pending_decision(thread_id)
            return NotAuthorised(detail, pending) if pending else InputError(detail)
        if exc.status_code in (400, 404, 422):
            return InputError(detail)
        return ServerUnreachable(self._said(exc))

    async def _who_decided(self, thread_id: str, said: str) -> str:
        """`said`, with who took the decision this front was about to take, if anyone."""
        who = await latest_decision(self.audit_page, thread_id)
        return f"{said.rstrip('.')}: it was {who}." if who else said

    def _cancel_later(self, thread_id: str, run_id: str) -> None:
        async def cancel() -> None:
            try:
                await self._client.http.post(
                    f"/shopbot/threads/{thread_id}/stop", json={"run_id": run_id}
                )
            except Exception:
                log.exception("stopping run %s of %s on the server failed", run_id, thread_id)

        task = asyncio.get_running_loop().create_task(cancel())
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    def stop_reply(self, thread_id: str) -> bool:
        running = self._running.get(thread_id)
        if running is None:
            return False
        task, _, watch, paying = running
        if paying or watch.done is not None or watch.paused or task.done():
            return False
        task.cancel()
        return True

    def paying_refund(self, thread_id: str) -> bool:
        running = self._running.get(thread_id)
        return running is not None and running[3]

    # --- conversations -------------------------------------------------------------------

    async def threads(
        self,
        *,
        limit: int | None = 200,
        matching: str = "",
        among: Collection[str] | None = None,
    ) -> list[ThreadInfo]:
        params: wire.Params = []
        if limit is not None:
            params.append(("limit", str(limit)))
        if matching:
            params.append(("matching", matching))
        if among is not None:
            params += [("among", thread_id) for thread_id in among] or [("among_none", "1")]
        got = await self._read(lambda: self._client.http.get("/shopbot/threads", params=params))
        return [wire.thread_info(item) for item in got]

    async def count_threads(self) -> int:
        return int((await self._get("/shopbot/threads-count"))["count"])

    async def thread(self, thread_id: str) -> ThreadInfo | None:
        try:
            return wire.thread_info(await self._get(f"/shopbot/threads/{thread_id}"))
        except NotFoundError:
            return None
        except APIStatusError as exc:
            raise InputError(_detail(exc)) from None

    async def waiting_for_decision(self) -> list[ThreadInfo]:
        return [wire.thread_info(item) for item in await self._get("/shopbot/waiting")]

    async def escalations(self) -> list[Escalation]:
        return [wire.escalation(item) for item in await self._get("/shopbot/escalations")]

    async def transcript(self, thread_id: str, limit: int | None = None) -> list[ChatLine]:
        params = {"limit": limit} if limit is not None else {}
        got = await self._get(f"/shopbot/threads/{thread_id}/lines", **params)
        return [wire.chat_line(item) for item in got]

    async def _state(self, thread_id: str) -> dict[str, Any] | None:
        try:
            uuid.UUID(thread_id)
        except ValueError:
            return None  # (no such thread on a server)
        try:
            return dict(await self._read(lambda: self._client.threads.get_state(thread_id)))
        except NotFoundError:
            return None

    async def active_agent(self, thread_id: str) -> str:
        state = await self._state(thread_id)
        values = state.get("values") if state else None
        agent = values.get("active_agent") if isinstance(values, dict) else None
        return str(agent or DEFAULT_AGENT)

    async def answering_elsewhere(self, thread_id: str) -> bool:
        if thread_id in self._running:
            return False
        try:
            uuid.UUID(thread_id)
            found = await self._read(lambda: self._client.threads.get(thread_id))
        except (ValueError, NotFoundError):
            return False
        return found.get("status") == "busy"

    # --- decisions and escalations -------------------------------------------------------

    async def pending_decision(self, thread_id: str) -> ApprovalRequest | None:
        state = await self._state(thread_id)
        for task in (state or {}).get("tasks") or ():
            for asked in task.get("interrupts") or ():
                found = request_from_interrupt(thread_id, asked.get("value"), str(asked.get("id")))
                if found is not None:
                    return await self.decision_as_it_stands(found)
        return None

    async def decision_as_it_stands(self, request: ApprovalRequest) -> ApprovalRequest:
        got = await self._read(
            lambda: self._client.http.post(
                "/shopbot/decisions/as-it-stands", json=wire.request_json(request)
            )
        )
        now: ApprovalRequest = wire.approval_request(got["request"])
        self._limits[now.request_id] = got.get("may_not_decide")
        return now

    def may_not_decide(self, request: ApprovalRequest) -> str | None:
        # Known for every request this backend has read (the server's answer); the server
        # refuses a decision beyond the operator's limit whatever is shown here.
        return self._limits.get(request.request_id)

    async def mark_handled(self, thread_id: str) -> Escalation | None:
        got = await self._read(
            lambda: self._client.http.post(f"/shopbot/threads/{thread_id}/handled", json=None)
        )
        closed = got.get("escalation")
        return wire.escalation(closed) if closed else None

    # --- drafts (this machine's: see draft_file.py) --------------------------------------

    async def draft(self, thread_id: str | None) -> str:
        return await asyncio.to_thread(self._drafts.draft, thread_id)

    async def save_draft(self, thread_id: str | None, text: str) -> None:
        await asyncio.to_thread(self._drafts.save, thread_id, text)

    async def drafted_threads(self) -> set[str]:
        return await asyncio.to_thread(self._drafts.drafted)

    # --- the audit log -------------------------------------------------------------------

    async def audit_page(
        self, query: AuditQuery, *, limit: int, before_id: int | None = None
    ) -> list[AuditEvent]:
        params = [*wire.audit_query_params(query), ("limit", str(limit))]
        if before_id is not None:
            params.append(("before_id", str(before_id)))
        got = await self._read(lambda: self._client.http.get("/shopbot/audit", params=params))
        return [wire.audit_event(item) for item in got]

    async def audit_count(self, query: AuditQuery) -> int:
        params = wire.audit_query_params(query)
        got = await self._read(lambda: self._client.http.get("/shopbot/audit/count", params=params))
        return int(got["count"])

    async def audit_thread_ids(self) -> list[str]:
        return [str(item) for item in await self._get("/shopbot/audit/threads")]

    async def audit_export(self, query: AuditQuery, dest: TextIO) -> int:
        from agents.audit.log import MAX_PAGE, export_line

        written, before = 0, None
        while page := await self.audit_page(query, limit=MAX_PAGE, before_id=before):
            for event in page:
                dest.write(export_line(event))
            written += len(page)
            before = page[-1].id
        return written


class _NotConnected(Exception):
    def __init__(self, cause: httpx.ConnectError) -> None:
        super().__init__(str(cause))
        self.cause = cause


async def _then(
    first: EngineEvent | None, rest: AsyncGenerator[EngineEvent, None]
) -> AsyncGenerator[EngineEvent, None]:
    """`first`, then the rest of the stream it came from (closed with this one)."""
    async with aclosing(rest):
        if first is not None:
            yield first
        async for event in rest:
            yield event


def _detail(exc: APIStatusError) -> str:
    try:
        body = exc.response.json()
    except ValueError:
        return exc.response.text[:500] or str(exc)
    detail = body.get("detail") if isinstance(body, dict) else None
    return str(detail or body)[:2_000]


def _server_error(data: object) -> str:
    said = data.get("message") if isinstance(data, dict) else None
    return (
        "ShopBot's server could not finish this turn"
        + (f" ({said})" if said else "")
        + "; your message is saved."
    )


__all__ = ["RemoteBackend", "server_thread_id"]
