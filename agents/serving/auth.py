"""Who may use a ShopBot server, and which runs it starts (`langgraph.json`: `auth`).

Operators are named with their tokens in `SHOPBOT_OPERATOR_TOKENS` ("dana:TOKEN,lee:TOKEN");
a request carries one as `Authorization: Bearer TOKEN`, and the operator's name is who decides
the approvals that request answers (services.py reads it from `langgraph_auth_user`; a name
the client sends is never read). With no tokens set the server is a local one: every request
is the login name's, and the log says so.

Each run is held to the run-creation check (agents/graph/admission.py) against the thread's
state before it exists: a resume with nothing waiting, or answering another request, or a
message while a decision waits is refused with HTTP 409, a malformed run with 422. The run's
recursion limit is ShopBot's, whatever the client or the server's default says.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.util
import logging
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from langgraph_sdk import Auth, get_client
from langgraph_sdk.errors import NotFoundError

from agents.errors import ConfigurationError
from agents.graph import admission
from agents.graph.context import ShopContext
from agents.graph.services import REVIEWER_KEY, SERVICES_KEY, opened, process_services
from agents.graph.specialists.spec import RECURSION_LIMIT
from agents.graph.turn_start import other_customer_text
from agents.reviewer import UNKNOWN, Reviewer, login_name
from agents.safety.redaction import register_secret

log = logging.getLogger("shopbot.serving")

TOKENS_VARIABLE = "SHOPBOT_OPERATOR_TOKENS"
# (JSON cannot make the objects these keys hold, so they are ignored anyway: refused, a client
# that tries learns it at once.)
_NOT_FROM_CLIENTS = (REVIEWER_KEY, SERVICES_KEY)
# langgraph-api marks a run whose client sent a context (else it mirrors `configurable`).
_CONTEXT_SENT = "__context_provided__"
# Shorter tokens can be guessed, and are too short to be redacted (agents/safety/redaction.py).
MIN_TOKEN_CHARS = 16


def operator_tokens(value: str) -> dict[str, str]:
    """{token: operator name} from "name:token,name2:token2"; `ConfigurationError` naming the
    variable (never a token) when an entry is not one."""
    tokens: dict[str, str] = {}
    for number, entry in enumerate((e for e in value.split(",") if e.strip()), start=1):
        name, colon, token = entry.partition(":")
        name, token = " ".join(name.split()), token.strip()
        if not colon or not name or len(token) < MIN_TOKEN_CHARS or " " in token:
            raise ConfigurationError(
                f"{TOKENS_VARIABLE}: entry {number} is not name:token with a token of at least "
                f"{MIN_TOKEN_CHARS} characters and no spaces."
            )
        tokens[token] = name[:64]
    return tokens


TOKENS = operator_tokens(os.environ.get(TOKENS_VARIABLE, ""))
for _token in TOKENS:
    register_secret(_token)
if not TOKENS:
    log.warning(
        "%s is not set: every request to this server acts as %s. Set operator tokens before "
        "anyone else can reach it.",
        TOKENS_VARIABLE,
        login_name(),
    )

auth = Auth()


@auth.authenticate
async def authenticate(headers: Mapping[Any, Any]) -> Auth.types.MinimalUserDict:
    """The operator whose token the request carries (401 without one, 403 for a wrong one).
    (`headers`: langgraph-api passes them by that name as bytes, Aegra as text.)"""
    if not TOKENS:
        return {"identity": login_name(), "permissions": ["operator"]}
    scheme, _, token = _authorization(headers).partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="An operator token is needed: Authorization: Bearer TOKEN."
        )
    given = token.strip().encode()
    # Every token compared, each in constant time: how long it takes says nothing of which.
    matched = [name for known, name in TOKENS.items() if hmac.compare_digest(known.encode(), given)]
    if not matched:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="This operator token is unknown."
        )
    return {"identity": matched[0], "permissions": ["operator"]}


@auth.on.threads.create_run
async def admit_run(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> None:
    """The run-creation check, and the run's settings that are ShopBot's, not the client's."""
    # langgraph-api hands the run's fields under "kwargs"; Aegra the request's own, at the top
    # (and applies only what is done to its config and context).
    given = value.get("kwargs")
    kwargs: dict[str, Any] = given if isinstance(given, dict) else value  # type: ignore[assignment]
    thread_id = str(value.get("thread_id") or "")
    try:
        strategy = value.get("multitask_strategy") or "reject"
        if strategy not in admission.MULTITASK_STRATEGIES:
            # "interrupt" and "rollback" cut the running turn short where it stands.
            raise admission.RunRefused(
                "bad_input",
                "A second run on a busy conversation is refused or queued "
                "(multitask_strategy 'reject' or 'enqueue').",
            )
        if kwargs.get("interrupt_before") or kwargs.get("interrupt_after"):
            raise admission.RunRefused(
                "bad_input", "A run pauses only where ShopBot asks a person (no interrupt_*)."
            )
        config = kwargs["config"] = kwargs.get("config") or {}
        configurable = config["configurable"] = config.get("configurable") or {}
        if configurable.get("checkpoint_id") or kwargs.get("checkpoint"):
            raise admission.RunRefused(
                "bad_input", "A run continues the conversation where it stands (no checkpoint)."
            )
        context = kwargs.get("context")
        sent = context if isinstance(context, Mapping) else {}
        if any(key in sent or key in configurable for key in _NOT_FROM_CLIENTS):
            raise admission.RunRefused(
                "bad_input",
                "Who decides is the operator the request authenticates; a run cannot name one.",
            )
        now = await _thread_now(thread_id) if thread_id else _NEW_THREAD
        if now.busy and strategy == "enqueue" and kwargs.get("command") is not None:
            # Checked now, run later: by then the question may be answered, and a resume with
            # nothing waiting does nothing. (A queued message is checked by the graph.)
            raise admission.RunRefused(
                "busy",
                f"Thread {thread_id} is answering a message; send the decision once it is done "
                "(a decision is never queued).",
            )
        named = str(sent.get("customer") or "").strip()
        if now.customer and named and named.casefold() != now.customer.casefold():
            # (The graph refuses it too; said here, before any run.)
            raise admission.RunRefused(
                "bad_input", other_customer_text(thread_id, now.customer, named)
            )
        admitted = admission.check_run(
            thread_id or "(new)",
            run_input=kwargs.get("input"),
            command=kwargs.get("command"),
            context=_client_context(context, provided=bool(configurable.get(_CONTEXT_SENT))),
            waiting=now.waiting,
            state_known=now.known,
        )
        # (The graph refuses it too, and asks again; said here, before any run. A question
        # waits, so a run of this process opened its services: nothing blocks here.)
        if admitted.decision is not None and now.waiting is not None and opened():
            limits = process_services().limits
            if problem := limits.may_not_decide(now.waiting, ctx.user.identity):
                raise admission.RunRefused(
                    "not_authorised",
                    f"{problem} Nothing was decided: the decision waits for an operator whose "
                    "limit covers it.",
                )
    except admission.RunRefused as exc:
        if kwargs.get("command") is not None and thread_id:
            who = getattr(getattr(ctx, "user", None), "identity", None)
            await _audit_refused(thread_id, kwargs["command"], str(exc), str(who or UNKNOWN))
        raise Auth.exceptions.HTTPException(status_code=exc.status, detail=str(exc)) from None
    if admitted.message is not None:
        # A pasted key never reaches the checkpoint, the model or the transcript.
        kwargs["input"] = {"messages": [{"role": "user", "content": admitted.message}]}
    # The brake is ShopBot's (the server's default is about 10,000 steps).
    config["recursion_limit"] = RECURSION_LIMIT


@auth.on.threads.update
async def no_state_writes(ctx: Auth.types.AuthContext, value: Auth.types.ThreadsUpdate) -> None:
    """A conversation's state is written by its runs only: `update_state` would clear a
    waiting question or a turn's brakes past every check. Metadata and a run's cancellation
    pass (a rollback would drop what a turn did, a refund's record with it)."""
    if "metadata" not in value and "action" not in value:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="A conversation's state is written by its runs only."
        )
    if value.get("action") == "rollback":
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="A run is stopped (interrupt), never rolled back."
        )


async def _audit_refused(thread_id: str, command: object, why: str, operator: str) -> None:
    """A decision refused before its run, in the audit log with the operator who sent it (as
    the in-process runner records it). Only a record: failing to write it refuses nothing
    more."""
    answer = command.get("resume") if isinstance(command, Mapping) else None
    detail = admission.refused_decision(answer, why, Reviewer(operator, "server").audit_detail())
    try:
        services = process_services() if opened() else await asyncio.to_thread(process_services)
        services.audit.append("decision_refused", thread_id=thread_id, agent=None, detail=detail)
        await asyncio.to_thread(services.audit.flush)
    except Exception:
        log.exception("recording the refused decision on %s failed", thread_id)


def _authorization(headers: Mapping[Any, Any]) -> str:
    for key, value in headers.items():
        name = key.decode("latin-1") if isinstance(key, bytes) else str(key)
        if name.lower() == "authorization":
            return value.decode("latin-1") if isinstance(value, bytes) else str(value)
    return ""


def _client_context(context: object, *, provided: bool) -> object:
    """The context the run will have: as the client sent it, or, when it sent none, what the
    server takes from the config's `configurable` (a context field there acts as one)."""
    if not isinstance(context, Mapping):
        return context
    if provided:
        return {k: v for k, v in context.items() if not str(k).startswith(("langgraph_", "__"))}
    return {k: v for k, v in context.items() if k in ShopContext.model_fields}


class ThreadNow(NamedTuple):
    """What the run-creation check knows of a thread as the run is asked for."""

    known: bool  # False: its state could not be read (see `_thread_now`)
    waiting: Mapping[str, Any] | None  # the question it waits for
    busy: bool  # a run of it is in flight
    customer: str | None = None  # whose conversation it is (its first turn's session)


_NEW_THREAD = ThreadNow(known=True, waiting=None, busy=False)


async def _thread_now(thread_id: str) -> ThreadNow:
    """The thread as it stands, read through langgraph-api's own API in process (no network,
    no second authentication). Another server (Aegra) has no such loopback: it refuses a
    resume with nothing waiting itself, and the graph refuses a message while a decision
    waits."""
    if importlib.util.find_spec("langgraph_api") is None:
        return ThreadNow(known=False, waiting=None, busy=False)
    client = get_client()
    try:
        thread = await client.threads.get(thread_id)
        state = await client.threads.get_state(thread_id)
    except NotFoundError:  # a new conversation
        return _NEW_THREAD
    interrupts = [i for task in state.get("tasks") or () for i in task.get("interrupts") or ()]
    waiting = admission.waiting_in(interrupts)
    return ThreadNow(
        known=True,
        waiting=waiting if isinstance(waiting, Mapping) else None,
        busy=thread.get("status") == "busy",
        customer=_customer_of(state.get("values")),
    )


def _customer_of(values: object) -> str | None:
    customer = values.get("customer") if isinstance(values, Mapping) else None
    return customer if isinstance(customer, str) and customer else None


__all__ = ["auth"]
