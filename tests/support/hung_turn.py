"""A `shopbot chat` turn that never ends, for the tests that kill it mid-turn: its model
waits for ever, as a provider that accepted the request and went silent.

Run as `python -m tests.support.hung_turn HOME THREAD MESSAGE`; it prints nothing.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.outputs import ChatResult

from agents.models.offline.demo_model import OfflineDemoModel
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from agents.store.threads import ThreadRegistry

REPO = Path(__file__).resolve().parents[2]


class SilentModel(OfflineDemoModel):
    """Never answers."""

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def hang(home: Path, thread_id: str, message: str) -> None:
    settings = Settings(home=home, force_offline=True)
    async with ShopBotEngine(settings, model=SilentModel()) as engine:
        await engine.send(thread_id, message, customer="Sam")


def killed_mid_turn(home: Path, thread_id: str) -> None:
    """A real turn of `thread_id`, its process killed (-9) while it answers."""
    turn = subprocess.Popen(
        [sys.executable, "-m", __name__, str(home), thread_id, "Where is ORD-002?"], cwd=REPO
    )
    try:
        deadline = time.monotonic() + 60
        while not _answering(home / "shopbot.sqlite", thread_id):
            assert turn.poll() is None, "the turn ended by itself"
            assert time.monotonic() < deadline, "the turn never started"
            time.sleep(0.05)
    finally:
        turn.kill()
        turn.wait()


def _answering(registry: Path, thread_id: str) -> bool:
    if not registry.exists():
        return False
    with ThreadRegistry(registry) as threads:
        info = threads.get(thread_id)
    return info is not None and info.status == "answering"


if __name__ == "__main__":
    asyncio.run(hang(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
