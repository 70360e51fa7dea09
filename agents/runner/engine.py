"""The engine behind the local backend: run a turn, answer an approval, list threads, read
transcripts and the audit log. Fronts reach it through `agents.backend` and never see graphs
or messages."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Collection, Iterator
from contextlib import aclosing, contextmanager
from functools import partial
from types import TracebackType
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from agents.audit.decisions import refund_decisions
from agents.audit.log import AuditLog
from agents.audit.writer import AuditWriter
from agents.errors import DecisionPending, InputError, NotAuthorised, NothingPending
from agents.events import (
    AgentChanged,
    ApprovalRequest,
    ApprovalRequested,
    EngineEvent,
    LimitReached,
    ReplyDone,
    TokenDelta,
    TurnFailed,
    TurnFinished,
    TurnResult,
    from_wire,
    outcome,
)
from agents.graph import admission
from agents.graph.context import RetryBudget, ShopContext
from agents.graph.parent import build_graph
from agents.graph.replies import LIMIT_REACHED, TURN_FAILED_NOTE
from agents.graph.reporting import transcribe
from agents.graph.services import REVIEWER_KEY, SERVICES_KEY, Services
from agents.graph.specialists.spec import RECURSION_LIMIT
from agents.graph.turn_start import other_customer_text
from agents.models.factory import make_model
from agents.refund_limits import RefundLimits, load_refund_limits
from agents.reviewer import Reviewer
from agents.runner.approval_now import as_it_stands
from agents.runner.run_watch import RunWatch
from agents.runner.stored_threads import StoredThreads
from agents.runner.thread_state import active_in
from agents.runner.turn_closing import (
    customer_message,
)
from agents.runner.turn_guard import TurnGuard
from agents.runner.turn_recovery import TurnRecovery
from agents.safety.redaction import register_secret
from agents.safety.text import MessageRejected, person_name
from agents.safety.trace_privacy import keep_secrets_out_of_traces
from agents.settings import OFFLINE_MODEL_LABEL, Settings
from agents.store.checkpoints import Closable, open_checkpoints
from agents.store.database import checked_database
from agents.store.escalations import Escalation, mark_handled
from agents.store.shop import ShopData
from agents.store.threads import (
    ChatLine,
    ThreadInfo,
    ThreadRegistry,
    validate_thread_id,
)

log = logging.getLogger("shopbot.engine")
# Turns between two prunings of a thread's checkpoints: at most this many superseded states
# (~10 kB each) are kept, and the ~1 ms a pruning costs is not paid on every turn.
PRUNE_EVERY = 10


class ShopBotEngine:
    """`async with ShopBotEngine(settings) as engine:` opens the stores and the graph."""

    def __init__(
        self,
        settings: Settings,
        *,
        model: BaseChatModel | None = None,
        retry: RetryBudget | None = None,
        offline_token_delay: float = 0.0,
    ) -> None:
        self.settings = settings
        # A model we built is ours to close; one handed in belongs to the caller.
        self._owns_model = model is None
        self.retry = retry or RetryBudget()
        self.model = model or make_model(
            settings,
            silence_timeout=self.retry.silence_timeout,
            offline_token_delay=offline_token_delay,
        )
        self._connection: Closable | None = None
        self.graph: Any = None
        self.limits = RefundLimits()

    @property
    def model_label(self) -> str:
        """What the fronts show as the model: "offline demo" for any in-process model."""
        from agents.models.offline.local_model import LocalChatModel

        if isinstance(self.model, LocalChatModel):
            return OFFLINE_MODEL_LABEL
        return self.settings.model_label

    async def start(self) -> None:
        for secret in self.settings.secrets():
            register_secret(secret)
        # Before the graph's first run: with LANGSMITH_TRACING on, every run is traced.
        keep_secrets_out_of_traces(self.settings.secrets())
        try:
            # Off the event loop: opening may wait on another process's lock, or re-index an
            # audit log written by an older ShopBot (seconds for a large one).
            # The reviewers file first: a broken one is said before anything is opened.
            self.limits = await asyncio.to_thread(load_refund_limits, self.settings.home)
            await asyncio.to_thread(self._open_stores)
            # The graph's transcript lines and turn ends go through it too, in order with
            # its audit events, off the event loop.
            # `_finish` flushes it once the run's checkpoint is saved (see the writer).
            self._recorder = AuditWriter(
                self._audit_log, threads=self.threads, store_at_turn_end=False
            )
            self._connection, self._saver = await open_checkpoints(self._where)
        except BaseException:
            await self.aclose()  # whatever did open is closed again
            raise
        self._guard = TurnGuard(self.threads, owner=f"{os.getpid()}:{id(self)}")
        self._services = Services(
            self.shop,
            self._recorder,
            self.retry,
            decisions_on=partial(refund_decisions, self._audit_log),
            unstoppable=self._guard.unstoppable,
            limits=self.limits,
        )
        self.graph = build_graph(self.model, self._saver)
        self._stored = StoredThreads(self.graph, self.shop, self.settings)
        self._recovery = TurnRecovery(
            self._stored, self.threads, self._guard, self._recorder, self._audit_log
        )
        try:
            await self._recovery.close_abandoned_turns()
        except Exception:  # the next turn on such a thread closes it just as well
            log.exception("closing turns left by a process that died failed")

    def _open_stores(self) -> None:
        """The thread registry, the shop and the audit log, in the deployment's one database
        (the home's, found missing where the home held data, is refused before anything is
        made; PostgreSQL's is reached first); each one is set as soon as it is open, so
        `aclose` closes whatever did open."""
        self._where = where = checked_database(self.settings)
        self.threads = ThreadRegistry(where)
        self.shop = ShopData(where)
        self._audit_log = AuditLog(where, secrets=self.settings.secrets())

    async def aclose(self) -> None:
        """Close everything that was opened; one failure does not keep the rest open."""
        if self._connection is not None:
            connection, self._connection = self._connection, None
            await connection.close()
        for store in ("_recorder", "shop", "_audit_log", "threads"):
            if (opened := self.__dict__.pop(store, None)) is not None:
                try:
                    if store == "_recorder":
                        # Its last write may wait out another process's lock: not on the
                        # event loop, which must keep taking signals and painting.
                        await asyncio.to_thread(opened.close)
                    else:
                        opened.close()
                except Exception:
                    log.exception("closing the %s failed", store.strip("_"))
        if self._owns_model:
            # ChatMistralAI keeps an httpx client per mode; the offline model has none.
            if isinstance(client := getattr(self.model, "async_client", None), httpx.AsyncClient):
                await client.aclose()
            if isinstance(client := getattr(self.model, "client", None), httpx.Client):
                client.close()

    async def __aenter__(self) -> ShopBotEngine:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # --- reading ---------------------------------------------------------------------

    @property
    def audit(self) -> AuditLog:
        """The audit log, with every event recorded so far stored and readable (unless its
        write failed: it is tried again, see AuditWriter)."""
        self._recorder.flush()
        return self._audit_log

    def list_threads(
        self, limit: int | None = 200, matching: str = "", among: Collection[str] | None = None
    ) -> list[ThreadInfo]:
        """The most recently updated first; see `ThreadRegistry.list`."""
        return self.threads.list(limit=limit, matching=matching, among=among)

    def count_threads(self) -> int:
        return self.threads.count()

    def thread(self, thread_id: str) -> ThreadInfo | None:
        return self.threads.get(thread_id)

    def waiting_for_decision(self) -> list[ThreadInfo]:
        """The conversations a human decision holds up (asked here, in another window or by
        `shopbot chat`), the one left alone longest first."""
        return self.threads.with_status("awaiting_approval")

    def escalations(self) -> list[Escalation]:
        """The conversations escalated to a person and not handled yet, the oldest first."""
        return self.threads.escalations()

    def close_escalation(self, thread_id: str, reviewer: Reviewer) -> Escalation | None:
        """`reviewer` handled the thread's escalation: closed, and said in the audit log with
        their name. None when it was not open (another window may have closed it)."""
        return mark_handled(self.threads, self._recorder, validate_thread_id(thread_id), reviewer)

    def transcript(self, thread_id: str, limit: int | None = None) -> list[ChatLine]:
        return self.threads.lines(thread_id, limit=limit)

    def draft(self, thread_id: str | None) -> str:
        """What was typed in the thread (None: in a new conversation, before its first
        message) and not sent, kept across switching and quitting."""
        return self.threads.draft(thread_id)

    def save_draft(self, thread_id: str | None, text: str) -> None:
        """Keep `text` as the thread's unsent draft (blank: none); None: a new conversation's,
        which the next new conversation takes. Sending a message ends a thread's draft."""
        self.threads.save_draft(thread_id, text)

    def drafted_threads(self) -> set[str]:
        """The threads with a draft kept (see `save_draft`)."""
        return self.threads.drafted()

    async def pending_approval(self, thread_id: str) -> ApprovalRequest | None:
        """The decision this thread waits for, if any (it survives restarts)."""
        return self._stored.pending(thread_id, await self._stored.snapshot(thread_id))

    def approval_as_it_stands(self, request: ApprovalRequest) -> ApprovalRequest:
        """`request` read again from the ledger and the audit log (off the event loop): the
        order may have been refunded or decided on elsewhere since it was asked."""
        if request.kind != "refund_approval":
            return request
        order_id = str(request.payload.get("order_id"))
        paid = self.shop.refund_for(order_id)
        return as_it_stands(
            request,
            paid_reference=paid.reference if paid else None,
            decided_before=refund_decisions(self._audit_log, order_id),
        )

    def answering_elsewhere(self, thread_id: str) -> bool:
        """Whether another process (a window, a `shopbot` command) runs a turn of
        `thread_id` now: its stored state is then not final (a decision it shows pending
        may be being answered), and a message or decision here would be refused."""
        return self._guard.held_elsewhere(thread_id)

    async def active_agent(self, thread_id: str) -> str:
        return active_in(await self._stored.snapshot(thread_id))

    # --- acting ----------------------------------------------------------------------

    def run_turn(
        self, thread_id: str, text: str, *, customer: str | None = None
    ) -> AsyncIterator[EngineEvent]:
        """One customer message, answered: a stream of events ending with `TurnFinished`."""
        return self._damage_named(thread_id, self._run_turn(thread_id, text, customer=customer))

    def resume(
        self,
        thread_id: str,
        decision: str,
        *,
        asked: str | None = None,
        reviewer: Reviewer | None = None,
    ) -> AsyncIterator[EngineEvent]:
        """Answer the pending approval of `thread_id` and let the graph carry on. `asked`:
        the `request_id` of the request the person decided on; if another one waits now,
        nothing is decided (`DecisionPending` carries the one waiting). `reviewer`: who
        decided, for the audit log (by default the login name, through "ShopBot's engine")."""
        reviewer = reviewer or Reviewer.here("ShopBot's engine")
        return self._damage_named(thread_id, self._resume(thread_id, decision, asked, reviewer))

    def may_not_decide(
        self, request: ApprovalRequest, reviewer: Reviewer | None = None
    ) -> str | None:
        """Why `reviewer` (by default the login name) may not decide `request`: a refund
        above their refund limit (the home's reviewers file); None when they may."""
        name = (reviewer or Reviewer.here("ShopBot's engine")).name
        return self.limits.may_not_decide({**request.payload, "kind": request.kind}, name)

    def stop_turn(self, thread_id: str) -> bool:
        """Stop the turn this process runs on `thread_id` (a person pressed Stop): its graph
        run is cancelled where it stands, as when the app closes, and the transcript says it
        was stopped. False when no turn of that thread is running its graph here, or when its
        reply is whole or its question asked (the run is only saving them)."""
        return self._guard.stop(thread_id)

    def paying_refund(self, thread_id: str) -> bool:
        """Whether `thread_id`'s turn is paying an approved refund and recording it right now:
        a stop then waits for nothing and is refused (`stop_turn` is False)."""
        return self._guard.in_unstoppable(thread_id)

    async def _damage_named(
        self, thread_id: str, events: AsyncGenerator[EngineEvent, None]
    ) -> AsyncIterator[EngineEvent]:
        """`events`, with a store found damaged outside the graph's run (the thread registry,
        the audit log) named as it is inside (see `StoredThreads.failure`)."""
        try:
            async with aclosing(events) as stream:  # (closed with us, its turn lock too)
                async for event in stream:
                    yield event
        except sqlite3.DatabaseError as exc:
            named = await self._stored.named(thread_id, exc)
            if named is exc:
                raise
            raise named from exc

    async def _run_turn(
        self, thread_id: str, text: str, *, customer: str | None
    ) -> AsyncGenerator[EngineEvent, None]:
        thread_id = self._valid_thread_id(thread_id)
        # The run-creation check a server makes too (admission.py): the same refusals.
        with _refusals_as_errors(None):
            # A pasted key or token never enters the conversation, the model or any store.
            message = admission.check_message_text(text)
        customer = self._customer_for(thread_id, customer)
        async with self._guard.turn(thread_id):
            agent, pending = await self._recovery.where_it_stands(thread_id)
            with _refusals_as_errors(pending):
                admission.check_no_decision_waits(thread_id, _waiting(pending))
            # Written here, not by the graph: a process killed before its run saved anything
            # still shows the message, and the next turn gives it to the model (its line's id
            # names it in the conversation; turn_recovery.py).
            said = self.threads.open_turn(thread_id, customer=customer, message=message)
            graph_input = {"messages": [customer_message(said)]}
            async for event in self._drive(graph_input, thread_id, customer, agent):
                yield event

    async def _resume(
        self, thread_id: str, decision: str, asked: str | None, reviewer: Reviewer
    ) -> AsyncGenerator[EngineEvent, None]:
        thread_id = self._valid_thread_id(thread_id)
        # (Typed as text, but this is where callers' values come in: a wrong type is their
        # input error, not an AttributeError from deep inside.)
        if not isinstance(decision, str) or not isinstance(asked, str | None):
            raise InputError(admission.NOT_TEXT)
        info = self.threads.get(thread_id)
        if info is None:
            raise InputError(f"Unknown thread {thread_id!r}: `shopbot threads` lists them.")
        async with self._guard.turn(thread_id):
            before = await self._stored.snapshot(thread_id)
            pending = self._stored.pending(thread_id, before)
            answer = decision if asked is None else {"decision": decision, "request_id": asked}
            try:
                with _refusals_as_errors(pending):
                    choice = admission.check_decision(thread_id, answer, _waiting(pending)).choice
                assert pending is not None, "a decision is admitted only while one waits"
                if problem := self.may_not_decide(pending, reviewer):
                    # (The graph refuses it too; said here, before anything runs.)
                    raise NotAuthorised(
                        f"{problem} Nothing was decided: the decision waits for a reviewer "
                        "whose limit covers it.",
                        pending,
                    )
            except InputError as exc:
                # Who tried to decide, and why it was refused, is the audit log's too.
                detail = admission.refused_decision(answer, str(exc), reviewer.audit_detail())
                self._recorder.append(
                    "decision_refused", thread_id=thread_id, agent=active_in(before), detail=detail
                )
                await self._recorder.aflush()
                raise
            self.threads.update(thread_id, status="answering")
            # With the request it answers: the graph refuses it for any other (decisions.py).
            resume: Command[Any] = Command(
                resume={"decision": choice, "request_id": pending.request_id}
            )
            agent = active_in(before)
            async for event in self._drive(resume, thread_id, info.customer, agent, reviewer):
                yield event

    async def send(self, thread_id: str, text: str, *, customer: str | None = None) -> TurnResult:
        """`run_turn` for callers that only want the outcome."""
        return await outcome(self.run_turn(thread_id, text, customer=customer))

    async def decide(self, thread_id: str, decision: str) -> TurnResult:
        return await outcome(self.resume(thread_id, decision))

    # --- internals ---------------------------------------------------------------------

    @staticmethod
    def _valid_thread_id(thread_id: str) -> str:
        try:
            return validate_thread_id(thread_id)
        except ValueError as exc:
            raise InputError(str(exc)) from exc

    def _customer_for(self, thread_id: str, customer: str | None) -> str | None:
        try:
            customer = person_name(customer)
        except MessageRejected as exc:
            raise InputError(str(exc)) from exc
        info = self.threads.get(thread_id)
        known = info.customer if info else None
        if customer and known and customer.casefold() != known.casefold():
            raise InputError(other_customer_text(thread_id, known, customer))
        if customer and info is not None and known is None and info.turns > 0:
            # Named now, its anonymous messages would read as theirs (the transcript, the
            # export), and what it showed unchecked by the ownership gate as shown to them.
            raise InputError(
                f"Thread {thread_id} began without a customer; start a new thread for {customer}."
            )
        return customer or known

    async def _drive(
        self,
        graph_input: Any,
        thread_id: str,
        customer: str | None,
        agent: str,
        reviewer: Reviewer | None = None,
    ) -> AsyncIterator[EngineEvent]:
        """Run the graph and pass its events on. The graph records the turn itself (its
        transcript lines, audit events and end); what is left here is what only a run that
        did not end in the graph needs: cancelled, failed with an exception, or looping."""
        config = self._stored.config(thread_id)
        # This process's own services and reviewer, as objects in the run's config: a
        # server's graph opens its own, and no client can put either there (see services.py).
        config["configurable"][SERVICES_KEY] = self._services
        if reviewer is not None:
            config["configurable"][REVIEWER_KEY] = reviewer
        context = ShopContext(customer=customer)
        yield AgentChanged(agent=agent)
        run = RunWatch(agent)
        failure: TurnFailed | None = None
        looping = False
        try:
            with self._guard.stoppable(thread_id):
                async for _namespace, wired in self.graph.astream(
                    graph_input,
                    config,
                    context=context,
                    stream_mode="custom",
                    subgraphs=True,
                    # Checkpoint when the run stops (done, interrupted or failed), not after every
                    # step: it halves a turn's cost and its disk growth. A crash mid-turn loses only
                    # that turn's unfinished steps; the transcript and audit log already hold the
                    # message, and the refund ledger makes a replayed approval pay nothing twice.
                    durability="exit",
                ):
                    if (data := from_wire(wired)) is None:
                        continue
                    if not isinstance(data, TokenDelta) and run.sees(data):
                        # The reply is whole, or the question asked: the rest of the run
                        # saves it, too late to stop. (A stop there noted "stopped before
                        # it was finished" under a finished reply, or lost the question.)
                        self._guard.too_late_to_stop(thread_id)
                    yield data
        except asyncio.CancelledError:
            self._recovery.record_cut(thread_id, run.agent)
            raise
        except GraphRecursionError:
            # The in-graph brakes stop a turn long before this; the run stopped mid-step, its
            # thread still pointing at the looping node.
            looping = True
            run.done = ReplyDone(run.agent, LIMIT_REACHED)
            detail = {"limit": "recursion", "detail": f"more than {RECURSION_LIMIT} steps"}
            self._recorder.append(
                "limit_reached", thread_id=thread_id, agent=run.agent, detail=detail
            )
            for event in (LimitReached(run.agent, **detail), run.done):
                transcribe(self._recorder, thread_id, event)
                yield event
        except Exception as exc:
            log.exception("turn failed on thread %s", thread_id)
            failure = await self._stored.failure(thread_id, exc)
            transcribe(self._recorder, thread_id, failure)
            yield failure
        if failure is None and run.failure is not None and not run.failure_streamed:
            # (Said in the transcript by the graph, as the event it reported.)
            yield run.failure
        with self._cut_noted(thread_id, run.agent):
            result, info = await self._finish(thread_id, run, failure, looping=looping)
        if result.pending is not None:
            yield ApprovalRequested(result.pending)
        yield TurnFinished(result)
        # Last, once the turn is recorded and told: a pruning cut short (a signal, the app
        # closing) ends no turn and hides no outcome.
        await self._prune(info)

    @contextmanager
    def _cut_noted(self, thread_id: str, agent: str) -> Iterator[None]:
        """A cancellation inside (the app closing while the end is recorded) is noted."""
        try:
            yield
        except asyncio.CancelledError:
            self._recovery.record_cut(thread_id, agent)
            raise

    async def _finish(
        self, thread_id: str, run: RunWatch, failure: TurnFailed | None, *, looping: bool
    ) -> tuple[TurnResult, ThreadInfo]:
        """How the turn ended. A run that ended in the graph recorded its end there; one that
        raised (`failure`) or looped is closed here: the thread must not point at the failed
        node, nor keep a history Mistral rejects. The stored state is read back only when the
        turn paused or did not end in the graph."""
        # What the graph recorded is stored before it is read, here and by the fronts.
        await self._recorder.aflush()
        agent = run.agent
        closing_here = failure is not None or looping
        pending: ApprovalRequest | None = None
        state = None
        if run.paused or closing_here:
            try:
                state = await self._stored.snapshot(thread_id)
            except Exception:
                if failure is None:
                    raise
                # The failure is said already; a state that cannot be read cannot be mended.
                log.exception("reading %s back after its failed turn failed", thread_id)
            else:
                pending = self._stored.pending(thread_id, state)
                agent = active_in(state)
                if run.paused and pending is None:
                    # Asked (the audit log says so) but never saved: nobody can answer it.
                    closing_here = True
                    self._recorder.append(
                        "approval_withdrawn",
                        thread_id=thread_id,
                        agent=agent,
                        detail={"reason": "the turn failed before its question was saved"},
                    )
        if closing_here and pending is None and state is not None:
            await self._stored.mend_tail(
                thread_id, state, LIMIT_REACHED if looping else TURN_FAILED_NOTE, say_it=looping
            )
        # A failure is said as one even when a question waits (a decision that could not be
        # carried out is asked again): the conversation is listed as waiting all the same.
        result = run.result(thread_id, agent=agent, pending=pending, failure=failure)
        status = result.status
        if closing_here:
            listed = "awaiting_approval" if pending is not None else status
            self.threads.update(
                thread_id, active_agent=agent, status="idle" if listed == "done" else listed
            )
            self._recorder.append(
                "turn_finished", thread_id=thread_id, agent=agent, detail={"status": status}
            )
            await self._recorder.aflush()
        info = self.threads.get(thread_id)
        assert info is not None, "a turn's thread is registered before it runs"
        return result, info

    async def _prune(self, info: ThreadInfo) -> None:
        """Every PRUNE_EVERY turns of a thread left idle (nothing pending), its superseded
        checkpoints and finished subgraph runs go. Only housekeeping: a failure (a lock held
        too long, a full disk) is logged and tried again PRUNE_EVERY turns later."""
        if info.status != "idle" or info.turns % PRUNE_EVERY:
            return
        try:
            await self._saver.aprune([info.thread_id], strategy="idle")
        except Exception:
            log.exception(
                "pruning the checkpoints of %s failed; kept for the next time", info.thread_id
            )


def _waiting(pending: ApprovalRequest | None) -> dict[str, Any] | None:
    """The question as the run-creation check reads it (with the ledger's options)."""
    if pending is None:
        return None
    return {
        "kind": pending.kind,
        "options": list(pending.options),
        "request_id": pending.request_id,
    }


@contextmanager
def _refusals_as_errors(pending: ApprovalRequest | None) -> Iterator[None]:
    """A run refused before it starts, as the errors the fronts tell a person about."""
    try:
        yield
    except admission.RunRefused as exc:
        if exc.reason == "nothing_pending":
            raise NothingPending(str(exc)) from None
        if exc.reason in ("decision_pending", "other_request"):
            raise DecisionPending(str(exc), pending) from None
        raise InputError(str(exc)) from None


__all__ = ["ShopBotEngine"]
