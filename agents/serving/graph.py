"""The graph a LangGraph server loads (`langgraph.json`: `shopbot`).

Compiled without a checkpointer: the server brings its own (`langgraph dev` refuses a graph
that has one). The model comes from the settings, as in the app: Mistral with a key, else the
offline demo model. The shop, its ledger and the audit log are this process's, opened from
`Settings.from_env()` (the same stores the app and `shopbot` commands open: the home's SQLite
file, or the PostgreSQL database of SHOPBOT_DATABASE_URL), once, off the event loop: the
server's blocking-call detector refuses SQLite on its loop.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
from functools import partial
from typing import Any

from agents.audit.decisions import refund_decisions
from agents.audit.log import AuditLog
from agents.audit.writer import AuditWriter
from agents.errors import ConfigurationError
from agents.graph.parent import build_graph
from agents.graph.services import Services, opened, process_services, serve_with
from agents.models.factory import make_model
from agents.refund_limits import load_refund_limits
from agents.safety.redaction import register_secret
from agents.safety.trace_privacy import keep_secrets_out_of_traces
from agents.settings import Settings
from agents.store.database import checked_database
from agents.store.shop import ShopData
from agents.store.threads import ThreadRegistry

log = logging.getLogger("shopbot.serving")

SETTINGS = Settings.from_env()
for _secret in SETTINGS.secrets():
    register_secret(_secret)
# Before the first run: with LANGSMITH_TRACING on, every run is traced, redacted.
keep_secrets_out_of_traces(SETTINGS.secrets())


def open_services(settings: Settings = SETTINGS) -> Services:
    """The deployment's stores, as the in-process runner opens them (blocking: call off the
    loop)."""
    # The reviewers file first: a broken one is said before anything is opened.
    limits = load_refund_limits(settings.home)
    where = checked_database(settings)
    threads = ThreadRegistry(where)
    shop = ShopData(where)
    audit = AuditLog(where, secrets=settings.secrets())
    writer = AuditWriter(audit, threads=threads)
    # What the writer holds is stored when the server stops (uvicorn ends on SIGTERM by
    # returning, so exit handlers run).
    atexit.register(writer.close)
    log.info("ShopBot serves the stores at %s (model: %s)", where, settings.model_label)
    return Services(shop, writer, decisions_on=partial(refund_decisions, audit), limits=limits)


# Seconds per token of the offline demo model's replies, so a front sees them typed (the app
# paces its own offline model the same way); none by default.
OFFLINE_PACE_VARIABLE = "SHOPBOT_OFFLINE_TOKEN_DELAY"


def offline_pace(value: str) -> float:
    """The offline model's pause per token from its variable: 0 to 1 second."""
    if not value.strip():
        return 0.0
    try:
        pace = float(value)
    except ValueError:
        raise ConfigurationError(f"{OFFLINE_PACE_VARIABLE}: not a number of seconds.") from None
    if not 0.0 <= pace <= 1.0:
        raise ConfigurationError(f"{OFFLINE_PACE_VARIABLE}: between 0 and 1 second per token.")
    return pace


serve_with(open_services)
_GRAPH = build_graph(
    make_model(
        SETTINGS, offline_token_delay=offline_pace(os.environ.get(OFFLINE_PACE_VARIABLE, ""))
    ),
    checkpointer=None,
)


async def shopbot() -> Any:
    """The graph factory the server calls for each use of the graph: this process's services
    are open (once, in a worker thread) before any node asks for them."""
    if not opened():
        await asyncio.to_thread(process_services)
    return _GRAPH


__all__ = ["open_services", "shopbot"]
