"""The Textual test helpers themselves (tests/support/tui.py): a helper that fails on a
busy machine makes every test that uses it flaky."""

from __future__ import annotations

import asyncio

from textual.app import App

from tests.support.tui import settle


async def test_settle_waits_past_a_worker_that_a_newer_one_replaced() -> None:
    # The chat restarts its exclusive reads (the decisions waiting, a thread's history)
    # whenever there is something new to read: one can be cancelled while settle waits.
    app: App[None] = App()
    async with app.run_test() as pilot:
        never = asyncio.Event()
        done: list[str] = []

        async def older() -> None:
            await never.wait()

        async def newer() -> None:
            done.append("newer")

        app.run_worker(older, group="read", exclusive=True)
        settling = asyncio.ensure_future(settle(pilot))
        await asyncio.sleep(0)  # settle is now waiting for the older read
        app.run_worker(newer, group="read", exclusive=True)
        await settling
        assert done == ["newer"]
        assert not any(worker.is_running for worker in app.workers)
