"""The `shopbot` command where only a real process shows it: the installed console script,
stopped by signals and by Ctrl+C while it loads, a reader that goes away (exit 141), stdin, a
terminal, and an approval answered by a new process."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agents.audit.log import AuditLog
from agents.graph.context import RetryBudget
from agents.store.threads import ThreadRegistry
from tests.cli.conftest import one_line_error
from tests.support.fake_mistral import (
    FAKE_API_KEY,
    Answer,
    FakeMistralServer,
    text,
    tool_call,
)

pytestmark = pytest.mark.cli


SHOPBOT = Path(sys.executable).with_name("shopbot")
# Refunds need a known customer: the demo customer whose orders ORD-002 and ORD-005 are.
AS_SAM = ("--customer", "Sam", "--offline")
RESULT_KEYS = {"thread_id", "status", "reply", "active_agent", "pending"}


def environ_for(home: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ours, and `home` as SHOPBOT_HOME."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MISTRAL_", "SHOPBOT_"))}
    return {**environ, "SHOPBOT_HOME": str(home), **(env or {})}


def run(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(SHOPBOT), *args],
        capture_output=True,
        text=True,
        env=environ_for(home, env),
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_console_script_is_installed() -> None:
    assert SHOPBOT.exists()


def test_the_command_starts_soon_enough_for_a_hung_provider_to_be_told_within_45_s(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    # What the limits make of a hung provider is measured in process (test_cli_provider.py);
    # this is the rest of the 45 s: the console script's start, up to its first request.
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    fake_mistral.script(text("Hello!"))
    started = time.monotonic()
    done = run(tmp_path, "chat", "s1", "Hi", env=env)
    assert done.returncode == 0, done.stderr
    start_up = fake_mistral.received_times()[0] - started
    budget = RetryBudget()
    longest_backoff = budget.base_delay * 1.2
    hung = budget.timeout_attempts * budget.silence_timeout + longest_backoff
    assert start_up + hung <= 45.0, f"{start_up:.1f} s to the first request"


def test_approval_survives_a_new_process_through_mistral(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    reason = "the left earcup stopped working"
    fake_mistral.script(
        tool_call("transfer_to_refund_agent", {"reason": "refund"}),
        tool_call("check_refund_eligibility", {"order_id": "ORD-001"}),
        tool_call("process_refund", {"order_id": "ORD-001", "reason": reason}),
        text("Your refund is on its way."),
    )
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    ask = run(
        tmp_path, "chat", "m1", f"Refund ORD-001, {reason}", "--customer", "Alex", "--json", env=env
    )
    assert json.loads(ask.stdout)["status"] == "awaiting_approval", ask.stderr
    done = run(tmp_path, "resume", "m1", "approve", "--json", env=env)
    assert json.loads(done.stdout)["reply"] == "Your refund is on its way."
    assert fake_mistral.served == 4


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "shopbot.sqlite") as audit:
        audit.append_many({"kind": "turn_started", "thread_id": "t1"} for _ in range(5_000))
    # `shopbot audit --limit 10000 | head -1`: far more output than a pipe holds.
    with subprocess.Popen(
        [str(SHOPBOT), "audit", "--limit", "10000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ_for(tmp_path),
    ) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        assert b"turn_started" in reader.stdout.readline()
        reader.stdout.close()
        stderr = reader.stderr.read()
        assert reader.wait(timeout=60) == 128 + signal.SIGPIPE
    assert stderr == b""


@pytest.mark.parametrize(
    "stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
)
def test_a_turn_stopped_by_a_signal_is_noted_released_and_the_thread_goes_on(
    tmp_path: Path, fake_mistral: FakeMistralServer, stop: signal.Signals
) -> None:
    # `timeout`, a service manager or a closed terminal stops `shopbot chat` mid-answer: the
    # turn ends as after Ctrl+C, not with the thread left "answering" and its lease held.
    asked, answer = threading.Event(), threading.Event()

    def held(body: dict[str, object]) -> Answer:
        asked.set()
        answer.wait(30)
        return text("Too late.")

    fake_mistral.respond_with(held)
    environ = environ_for(
        tmp_path, {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    )
    with subprocess.Popen(
        [str(SHOPBOT), "chat", "s1", "Hello", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    ) as chat:
        try:
            assert asked.wait(60), "the turn never reached the model"
            chat.send_signal(stop)
            stdout, stderr = chat.communicate(timeout=60)
        finally:
            answer.set()
    assert chat.returncode == 128 + stop
    # `--json` still prints one object: the stop, said as on stderr.
    stopped = json.loads(stdout)
    assert (stopped["status"], stopped["reply"], stopped["pending"]) == ("error", None, None)
    assert (stopped["thread_id"], stopped["active_agent"]) == ("s1", "order_agent")
    assert stderr.strip() == f"shopbot: {stopped['error']}"
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("shopbot: ")
    fake_mistral.acknowledge_problems()  # (the answer found its reader gone)
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        info = registry.get("s1")
        assert info is not None and info.status == "error"
        assert [line.role for line in registry.lines("s1")] == ["customer", "note"]
        assert registry.claim_turn("s1", "someone else")  # the lease went with the turn
        registry.release_turn("s1", "someone else")
    finished = run(tmp_path, "audit", "--kind", "turn_finished", "--json").stdout.splitlines()
    assert [json.loads(line)["detail"] for line in finished] == [{"status": "cut off"}]
    fake_mistral.respond_with(lambda body: text("Hello again."))
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    again = run(tmp_path, "chat", "s1", "Hello?", "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["reply"] == "Hello again."


def test_provider_retries_are_told_on_a_terminal_and_never_into_a_pipe(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    answer = "Hello! How can I help you today?"
    # Into a pipe (a script): stdout has the reply, stderr stays empty.
    fake_mistral.fail_next(429, times=2, retry_after=0.1)
    fake_mistral.script(text(answer))
    piped = run(tmp_path, "chat", "p1", "Hi", env=env)
    assert piped.returncode == 0 and piped.stderr == ""
    assert answer in piped.stdout

    # On a terminal: each retry says so as it happens, one line each.
    fake_mistral.fail_next(429, times=2, retry_after=0.1)
    fake_mistral.script(text(answer))
    done, said = run_on_a_terminal(tmp_path, "stderr", "chat", "p2", "Hi", env=env)
    assert done.returncode == 0 and answer in done.stdout
    lines = said.decode().splitlines()
    assert len(lines) == 2, lines
    for attempt, line in enumerate(lines, start=1):
        assert line.startswith("shopbot: ") and "rate" in line.lower()
        assert line.endswith(f"(attempt {attempt}).")


def test_a_reply_reads_as_markdown_on_a_terminal_and_as_written_into_a_pipe(
    tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    answer = (
        "Found **ORD-002**:\n\n- Status: In Transit\n- Note: [bold]x[/] "
        "[track it](http://evil.example/t) \x1b[31mred\x1b]8;;http://x\x07\n\n"
        "Your parcel <ORD-002> is <b>late</b>. ![photo](http://evil.example/p.png)"
    )
    fake_mistral.script(text(answer))
    piped = run(tmp_path, "chat", "md1", "Hi", env=env)
    assert piped.returncode == 0 and "Found **ORD-002**:" in piped.stdout  # as written

    fake_mistral.script(text(answer))
    done, shown = run_on_a_terminal(tmp_path, "stdout", "chat", "md2", "Hi", env=env)
    assert done.returncode == 0, done.stderr
    # Rich's own styling, then without it: what a person reads.
    read = re.sub(r"\x1b\[[0-9;]*m", "", shown.decode())
    assert "Found ORD-002:" in read and "**" not in read
    assert "• Status: In Transit" in read
    # The model's text stays text: markup literal, the link's address shown, its escape
    # sequences made visible (no colour, no hidden OSC 8 link of its own).
    assert "[bold]x[/]" in read and "http://evil.example/t" in read
    assert "\x1b]8;" not in shown.decode() and "\x1b[31m" not in shown.decode()
    # HTML is text (Rich dropped it: "Your parcel  is late"), an image its text and address.
    assert "Your parcel <ORD-002> is <b>late</b>." in read
    assert "photo (http://evil.example/p.png)" in read and "🌆" not in read


# Ctrl+C while `shopbot` is still loading (a third of a second, its imports): pressed, in
# effect, when the import system first looks for `module`. Then as the console script does.
CTRL_C_WHILE_LOADING = """
import os, signal, sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
from shopbot_tui.cli.main import main
sys.exit(main(["threads"]))
"""


@pytest.mark.parametrize("module", ["argparse", "agents.backend", "shopbot_tui.cli.parser"])
def test_ctrl_c_while_the_command_loads_is_one_line_not_a_traceback(
    tmp_path: Path, module: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_LOADING, module],
        capture_output=True,
        text=True,
        env=environ_for(tmp_path),
        timeout=120,
        check=False,
    )
    assert done.stderr == "shopbot: interrupted\n"
    assert done.returncode == 128 + signal.SIGINT and done.stdout == ""


def run_on_a_terminal(
    home: Path, stream: str, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """`shopbot args` with `stream` ("stdout" or "stderr") a terminal, the other a pipe; what
    the terminal showed."""
    controller, terminal = pty.openpty()
    piped: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    piped[stream] = terminal
    try:
        done = subprocess.run(
            [str(SHOPBOT), *args],
            **piped,
            text=True,
            env=environ_for(home, env),
            timeout=120,
            check=False,
        )
        os.close(terminal)
        shown = b""
        while chunk := _read_some(controller):
            shown += chunk
    finally:
        os.close(controller)
    return done, shown


def _read_some(fd: int) -> bytes:
    """What the terminal holds (b"" once it is drained and closed)."""
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: every writer closed the terminal
        return b""


def run_with_stdin(home: Path, data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [str(SHOPBOT), *args],
        input=data,
        capture_output=True,
        env=environ_for(home),
        timeout=120,
        check=False,
    )
    assert b"Traceback" not in done.stderr, done.stderr
    return done


def test_a_message_of_dash_is_read_from_stdin(tmp_path: Path) -> None:
    email = "Hello,\n\nwhere is my order ORD-002?\nI ordered it last week.\n\nSam\n"
    done = run_with_stdin(tmp_path, email.encode(), "chat", "in1", "-", "--customer", "Sam")
    assert done.returncode == 0, done.stderr
    assert b"In Transit" in done.stdout and done.stderr == b""
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        sent = registry.lines("in1")[0]
    assert sent.role == "customer" and "where is my order ORD-002?" in sent.text

    # What the engine refuses from argv it refuses from stdin, with the same line.
    long = run_with_stdin(tmp_path, b"x" * 20_000, "chat", "in2", "-")
    assert long.returncode == 2 and long.stdout == b""
    assert b"too long (20,000 characters; the limit is 16,000)" in long.stderr
    empty = run_with_stdin(tmp_path, b"", "chat", "in2", "-")
    assert empty.returncode == 2 and len(empty.stderr.splitlines()) == 1

    # More than could ever be a message is not read into memory whole.
    huge = run_with_stdin(tmp_path, b"x" * (3 << 20), "chat", "in3", "-")
    assert huge.returncode == 2
    assert huge.stderr.decode().strip() == (
        "shopbot: the message on stdin is larger than 1 MB; shorten it or send it in parts."
    )

    # Bytes that are not UTF-8 are said, as for an argument.
    odd = run_with_stdin(tmp_path, b"Where is ORD-002? \xff\xfe", "chat", "in4", "-")
    assert odd.returncode == 0, odd.stderr
    assert b"2 byte(s) of MESSAGE were not UTF-8" in odd.stderr


def test_a_message_of_dash_with_stdin_closed_says_so(tmp_path: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", f'exec "{SHOPBOT}" chat c1 - <&-'],
        capture_output=True,
        text=True,
        env=environ_for(tmp_path),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert one_line_error(done) == (
        "shopbot: MESSAGE is - but stdin is closed: give the message, or pipe it in."
    )
