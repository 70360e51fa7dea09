"""The `shopbot` command in-process (`main(argv)`): a fresh home, and its one-line errors."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agents.graph.context import RetryBudget
from agents.safety import redaction
from agents.store.home import forget_checked
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


def use_budget(monkeypatch: pytest.MonkeyPatch, **limits: Any) -> RetryBudget:
    """The engine `main` opens builds its budget with these limits instead of the defaults."""
    monkeypatch.setattr("agents.runner.engine.RetryBudget", partial(RetryBudget, **limits))
    return RetryBudget(**limits)


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


# What a test's `shopbot` never inherits from the person running the tests (nor from a
# fixture such as fake_mistral's): a test says the environment it means.
OWN_VARIABLES = ("MISTRAL_", "SHOPBOT_", "LANGSMITH_", "LANGCHAIN_")


@dataclass(frozen=True)
class Ran:
    """What `shopbot ARGV` did: its exit code and what it wrote (as a CompletedProcess has)."""

    returncode: int
    stdout: str
    stderr: str


class Shopbot:
    """`shopbot ARGV` in this process through `main(argv)`, started as a new process would
    be: only the environment given (and the home), no secret registered and no home checked
    by an earlier command, and its log file closed when it ends."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
        self._monkeypatch = monkeypatch
        self._capsys = capsys

    def __call__(self, home: Path, *argv: str, env: dict[str, str] | None = None) -> Ran:
        self._capsys.readouterr()  # what ran before is not this command's output
        root = logging.getLogger()
        before = list(root.handlers)
        with self._monkeypatch.context() as patch:
            for name in list(os.environ):
                if name.startswith(OWN_VARIABLES):
                    patch.delenv(name)
            patch.setenv("SHOPBOT_HOME", str(home))
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            # The app on this test's terminal would wait for keys there: fail instead.
            patch.setattr("shopbot_tui.app.ShopBotApp.run", _the_app_started)
            # Both are process-wide: a new process starts with neither.
            patch.setattr(redaction, "_registered", set())
            forget_checked()
            try:
                code = main(list(argv))
            finally:
                for handler in [h for h in root.handlers if h not in before]:
                    root.removeHandler(handler)
                    handler.close()
        out, err = self._capsys.readouterr()
        assert "Traceback" not in err, err
        return Ran(code, out, err)


def _the_app_started(*args: object, **kwargs: object) -> None:
    raise AssertionError("the app started")


@pytest.fixture
def shopbot(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Shopbot:
    return Shopbot(monkeypatch, capsys)


def one_line_error(done: Ran | subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command says on stderr."""
    line = one_line(done.stderr)
    assert line.startswith("shopbot: ")
    return line
