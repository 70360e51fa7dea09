"""The `shopbot` command in-process (`main(argv)`): a fresh home, and its one-line errors."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shopbot_tui.cli.main import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in os.environ:
        if name.startswith(("MISTRAL_", "SHOPBOT_", "LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOPBOT_HOME", str(tmp_path))
    root = logging.getLogger()
    before = list(root.handlers)
    yield tmp_path
    # main() points the root logger at the home's log file: take that back.
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)
        handler.close()


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    """`shopbot ARGV --json`: its exit code, its one object, and its stderr."""
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def audit_events(capsys: pytest.CaptureFixture[str], thread_id: str) -> list[dict[str, Any]]:
    """`shopbot audit --thread ID --json`, oldest first."""
    assert main(["audit", "--thread", thread_id, "--json", "--limit", "10000"]) == 0
    out = capsys.readouterr().out
    return [json.loads(line) for line in reversed(out.splitlines())]
