"""`shopbot.log`, the diagnosis file: what goes wrong is written there, and never a secret."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from agents.logging_setup import configure_logging
from agents.models.offline.demo_model import OfflineDemoModel
from agents.safety.redaction import register_secret
from tests.support.engine import open_engine, say

# Shaped like nothing a pattern catches: only knowing it redacts it.
PLAIN_KEY = "plainwordskeyfortesting"
BEARER = "Authorization: Bearer a1b2c3d4e5f6g7h8i9j0"


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    yield configure_logging(tmp_path)
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


class LeakyFailingModel(OfflineDemoModel):
    """A model whose failure quotes the key and the request's headers, as a client library's
    error might."""

    def answer(self, messages: Any, tools: Any, tool_choice: Any) -> AIMessage:
        raise RuntimeError(f"request failed: {BEARER}; api_key={PLAIN_KEY}")


def test_a_logged_exception_keeps_its_story_and_loses_its_secrets(log_file: Path) -> None:
    register_secret(PLAIN_KEY)
    try:
        raise ValueError(f"refused {PLAIN_KEY} / {BEARER}")
    except ValueError:
        logging.getLogger("shopbot.engine").exception("closing failed for %s", PLAIN_KEY)
    written = log_file.read_text(encoding="utf-8")
    assert "closing failed for" in written and "ValueError: refused" in written
    assert "Traceback" in written  # the traceback is kept, for diagnosis
    assert PLAIN_KEY not in written and "a1b2c3d4e5f6g7h8i9j0" not in written


async def test_a_turn_that_fails_inside_is_logged_without_the_key(
    tmp_path: Path, log_file: Path
) -> None:
    register_secret(PLAIN_KEY)
    async with open_engine(tmp_path / "home", model=LeakyFailingModel()) as engine:
        turn = await say(engine, "lk1", "Where is ORD-001?", "Alex")
    assert turn.result.status == "error"
    written = await asyncio.to_thread(log_file.read_text, encoding="utf-8")
    assert "turn failed on thread lk1" in written and "RuntimeError: request failed" in written
    assert PLAIN_KEY not in written and "a1b2c3d4e5f6g7h8i9j0" not in written
    # Nor does the person see it: the turn's error is one safe line.
    assert PLAIN_KEY not in (turn.result.error or "")
