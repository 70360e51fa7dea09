"""Every `shopbot` command with `--server URL` (in-process, `main(argv)`), against
`langgraph dev`: the operator's machine holds the URL and a token, nothing else."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from shopbot_tui.cli.main import main
from tests.serving.conftest import DANA_TOKEN
from tests.support import langgraph_dev

pytestmark = [pytest.mark.serving, pytest.mark.xdist_group("langgraph-dev-fronts")]

COMPLAINT = (
    "This is outrageous! My keyboard ORD-006 arrived broken and nobody answers, I am furious"
)


@pytest.fixture
def operator_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in os.environ:
        if name.startswith(("MISTRAL_", "SHOPBOT_", "LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOPBOT_HOME", str(tmp_path))
    monkeypatch.setenv("SHOPBOT_SERVER_TOKEN", DANA_TOKEN)
    return tmp_path


def shopbot(
    served: langgraph_dev.Served, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str, str]:
    code = main(["--server", served.url, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_every_command_works_with_a_server(
    operators_served: langgraph_dev.Served, operator_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread_id = str(uuid.uuid4())
    code, out, err = shopbot(
        operators_served, capsys, "chat", thread_id, COMPLAINT, "--customer", "Jordan", "--json"
    )
    assert code == 0, err
    asked = json.loads(out)
    assert asked["status"] == "awaiting_approval"
    assert asked["pending"]["kind"] == "complaint_review"

    code, out, _ = shopbot(operators_served, capsys, "threads", "--only", "waiting", "--json")
    assert code == 0 and thread_id in [row["thread_id"] for row in json_lines(out)]

    code, out, err = shopbot(
        operators_served, capsys, "resume", thread_id, "escalate_to_senior", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["status"] == "done"

    code, out, _ = shopbot(operators_served, capsys, "threads", "--only", "escalated", "--json")
    (row,) = [row for row in json_lines(out) if row["thread_id"] == thread_id]
    assert row["escalation"]["agent"] == "complaints_agent"

    code, out, err = shopbot(operators_served, capsys, "handled", thread_id, "--json")
    assert code == 0, err
    assert json.loads(out)["thread_id"] == thread_id
    code, out, _ = shopbot(operators_served, capsys, "threads", "--only", "escalated", "--json")
    assert thread_id not in out

    code, out, _ = shopbot(operators_served, capsys, "show", thread_id, "--json")
    lines = json_lines(out)
    assert code == 0 and lines[0]["text"] == COMPLAINT
    assert "escalation handled by dana (server)" in [line["text"] for line in lines]

    code, out, _ = shopbot(operators_served, capsys, "audit", "--thread", thread_id, "--json")
    kinds = {event["kind"]: event for event in json_lines(out)}
    assert code == 0
    assert kinds["approval_decided"]["detail"]["decided_by"] == "dana"
    assert kinds["escalation_closed"]["detail"]["decided_by"] == "dana"
    code, out, _ = shopbot(operators_served, capsys, "audit", "--thread", thread_id)
    assert code == 0 and "escalation_closed" in out

    # Nothing of the server's was kept here: no database, no transcript.
    assert not (operator_home / "shopbot.sqlite").exists()
    assert DANA_TOKEN not in (operator_home / "shopbot.log").read_text()


def test_refusals_on_a_server_are_one_line_and_exit_2(
    operators_served: langgraph_dev.Served, operator_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = shopbot(operators_served, capsys, "chat", "t-1", "hello")
    assert code == 2 and "names its conversations by UUID" in err
    code, _, err = shopbot(operators_served, capsys, "resume", str(uuid.uuid4()), "approve")
    assert code == 2 and "has no decision pending" in err
    code, _, err = shopbot(operators_served, capsys, "chat", str(uuid.uuid4()), "hi", "--offline")
    assert code == 2 and "a ShopBot server runs its own" in err
    code, _, err = shopbot(operators_served, capsys, "eval")
    assert code == 2 and "never on a server" in err


def test_an_unreachable_server_is_one_line(
    operator_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.backend import remote

    monkeypatch.setattr(remote, "READ_RETRIES", (0.0,))
    assert main(["--server", "http://127.0.0.1:9", "threads"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("shopbot: The ShopBot server at http://127.0.0.1:9 cannot be reached")
    assert main(["--server", "ftp://example", "threads"]) == 2
    assert "must be an http:// or https:// URL" in capsys.readouterr().err
