"""The app as an operator runs it with `shopbot --server URL` (settings naming a server, the
app's own backend choice): the story of the local Pilot tests, against `langgraph dev`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from agents.backend.remote import RemoteBackend
from agents.events import outcome
from agents.settings import Settings
from shopbot_tui.audit.screen import AuditViewerScreen
from shopbot_tui.audit.table import AuditEventTable
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.threads.screen import ThreadsScreen
from tests.serving.conftest import DANA_TOKEN, LEE_TOKEN
from tests.support import langgraph_dev
from tests.support.tui import (
    SIZE,
    RecordingApp,
    frame_text,
    instant_approval,  # noqa: F401 - autouse fixture
    iter_notices,
    notes,
    replies,
    send,
    settle,
    wait_until,
)

pytestmark = [pytest.mark.serving, pytest.mark.xdist_group("langgraph-dev-fronts")]


def app_on(served: langgraph_dev.Served, home: Path, customer: str) -> RecordingApp:
    """What `SHOPBOT_SERVER_TOKEN=... shopbot --server URL --customer NAME` starts."""
    settings = Settings(home=home, server_url=served.url, server_token=DANA_TOKEN)
    return RecordingApp(settings, thread_id=None, customer=customer)


async def started(pilot: Any) -> None:
    await wait_until(pilot, lambda: pilot.app.chat.backend is not None, "the backend to start")
    await settle(pilot)


def refunds(served: langgraph_dev.Served, order_id: str) -> int:
    import sqlite3
    from contextlib import closing

    path = served.home / "shopbot.sqlite"
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        (count,) = db.execute("SELECT count(*) FROM refunds WHERE order_id = ?", (order_id,))
        return int(count[0]) if isinstance(count, tuple) else int(count)


async def test_the_app_on_a_server_answers_asks_and_pays_once(
    operators_served: langgraph_dev.Served, tmp_path: Path
) -> None:
    app = app_on(operators_served, tmp_path, "Sam")
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        assert isinstance(app.backend, RemoteBackend)
        # The status line says where the model runs.
        assert f"offline demo on {operators_served.url.removeprefix('http://')}" in frame_text(app)
        await send(pilot, "Where is my order ORD-002?")
        assert any("ORD-002" in reply for reply in replies(app)), replies(app)

        await send(pilot, "Please refund ORD-005, the speaker stopped charging after two days")
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.request.payload["order_id"] == "ORD-005"
        await pilot.press("a", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        assert refunds(operators_served, "ORD-005") == 1
        assert "decision: approve, by dana (server)" in notes(app)
        assert any("refund paid: ORD-005" in note for note in notes(app)), notes(app)
        thread_id = app.chat.thread_id

        # The conversation list, from the server.
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, ThreadsScreen)
        assert "Where is my order ORD-002?" in frame_text(app)
        await pilot.press("escape")
        await settle(pilot)

        # The audit log, from the server: the decision in dana's name.
        await pilot.press("ctrl+l")
        screen = app.screen
        assert isinstance(screen, AuditViewerScreen)
        await asyncio.wait_for(screen.first_page_shown.wait(), timeout=30)
        await settle(pilot)
        events = screen.query_one(AuditEventTable).events
        decided = [e for e in events if e.kind == "approval_decided" and e.thread_id == thread_id]
        assert [(e.detail["decided_by"], e.detail["via"]) for e in decided] == [("dana", "server")]


async def test_a_dialog_closes_when_another_operator_decides_and_says_who(
    operators_served: langgraph_dev.Served, tmp_path: Path
) -> None:
    app = app_on(operators_served, tmp_path / "dana", "Jordan")
    lee = RemoteBackend(operators_served.url, LEE_TOKEN, home=tmp_path / "lee", via="app")
    await lee.start()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot)
            await send(pilot, "I want my money back for ORD-006, several keys stopped working")
            assert isinstance(app.screen, ApprovalScreen)
            thread_id, request = app.chat.thread_id, app.screen.request
            box = app.chat.query_one("#message", Input)

            await outcome(lee.decide(thread_id, "reject", request_id=request.request_id))
            app.chat.waiting.look()  # (what the app does every few seconds)
            await wait_until(pilot, lambda: app.chat.pending is None, "the dialog to close")
            await settle(pilot)
            assert not isinstance(app.screen, ApprovalScreen)
            said = list(iter_notices(app, "warning"))
            assert any("was rejected by lee (server)" in notice for notice in said), said
            assert "decision: reject, by lee (server)" in notes(app)
            assert box.value == ""
    finally:
        await lee.close()
    assert refunds(operators_served, "ORD-006") == 0


async def test_the_app_says_a_server_it_cannot_reach_and_keeps_what_is_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.backend import remote

    monkeypatch.setattr(remote, "READ_RETRIES", (0.0,))
    settings = Settings(home=tmp_path, server_url="http://127.0.0.1:9", server_token=DANA_TOKEN)
    app = RecordingApp(settings, thread_id=None, customer="Sam")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is my order ORD-002?")
        said = frame_text(app) + " ".join(message for _, _, message in app.notices)
        assert "The ShopBot server at http://127.0.0.1:9 cannot be reached" in said
        assert app.chat.query_one("#message", Input).value == "Where is my order ORD-002?"
        assert DANA_TOKEN not in said
