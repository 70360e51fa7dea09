"""`shopbot` failures a subprocess cannot stage as root (a read-only disk), run in-process."""

from __future__ import annotations

import argparse
import asyncio
import errno
import io
import json
import logging
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from agents import logging_setup
from shopbot_tui.cli.main import main
from shopbot_tui.cli.parser import build_parser
from tests.cli.conftest import one_line
from tests.support.failing_models import LockedStoreModel
from tests.support.read_only_sqlite import make_sqlite_read_only


def test_read_only_home_is_named_and_exits_2(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log_file = home / "shopbot.log"

    def read_only_disk(*args: Any, **kwargs: Any) -> logging.FileHandler:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(log_file))

    monkeypatch.setattr(logging_setup, "QuietFileHandler", read_only_disk)
    assert main(["threads"]) == 2
    assert one_line(capsys.readouterr().err) == (
        f"shopbot: Cannot use the ShopBot folder {home}: Read-only file system ({log_file}). "
        "Make it a folder you can write to, or set SHOPBOT_HOME to one."
    )


def test_read_only_database_is_named_exits_2_and_changes_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "a1", "Where is ORD-002?", "--offline"]) == 0
    capsys.readouterr()
    assert main(["threads", "--json"]) == 0
    before = capsys.readouterr().out
    with monkeypatch.context() as patch:
        make_sqlite_read_only(patch, home)
        assert main(["chat", "a1", "Where is ORD-001?", "--offline"]) == 2
        line = one_line(capsys.readouterr().err)
    assert line.startswith(f"shopbot: Cannot write to {home}{os.sep}"), line
    assert ".sqlite (attempt to write a readonly database). Nothing was changed." in line
    assert main(["threads", "--json"]) == 0
    after = capsys.readouterr().out
    assert after == before
    assert json.loads(after)["turns"] == 1


def test_a_store_failing_mid_turn_exits_2_not_as_the_provider(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("agents.runner.engine.make_model", lambda *a, **k: LockedStoreModel())
    assert main(["chat", "lk", "Where is ORD-001?", "--offline"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("shopbot: A ShopBot database ") and "your message is saved" in line


def test_audit_takes_any_valid_moment_and_refuses_an_empty_kind(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "a1", "Where is ORD-002?", "--offline"]) == 0
    capsys.readouterr()
    assert main(["audit", "--since", "0001-01-01T00:00+14:00", "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 1
    # `--kind "$KIND"` with KIND unset listed every kind, as if no filter had been given.
    assert main(["audit", "--kind", ""]) == 2
    out, err = capsys.readouterr()
    assert out == "" and one_line(err).startswith("shopbot: unknown kind ''; kinds: ")


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("2026-12-01", "2026-11-30"),
        ("2026-11-30T10:00", "2026-11-30T10:00"),  # since is inclusive, until exclusive
        ("2026-11-30T10:00+02:00", "2026-11-30T08:00Z"),  # the same moment, in two zones
    ],
)
def test_audit_refuses_a_since_that_is_not_before_its_until(
    home: Path, capsys: pytest.CaptureFixture[str], since: str, until: str
) -> None:
    assert main(["audit", "--since", since, "--until", until]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert one_line(err) == (
        f"shopbot: --since '{since}' is not before --until '{until}': no event could match; "
        "swap them?"
    )
    assert main(["audit", "--since", until[:10], "--until", "2027-01-01"]) == 0


LONG = "x" * 10_000


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["chat", LONG, "hi", "--offline"], "Invalid thread id 'xxx"),
        (["resume", LONG, "approve", "--offline"], "Invalid thread id 'xxx"),
        (["audit", "--thread", LONG], "Invalid thread id 'xxx"),
        (["audit", "--kind", LONG], "unknown kind 'xxx"),
        (["audit", "--since", LONG], "not an ISO-8601 date or time: 'xxx"),
        (["audit", "--limit", LONG], "not a whole number: 'xxx"),
        (["threads", LONG], "unrecognized arguments: xxx"),
        ([LONG], "unknown command 'xxx"),
    ],
)
def test_a_huge_argument_is_echoed_cut_short_in_its_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    # A 10 KB thread id, kind or date came back whole: one "line" of 10 KB.
    assert main(args) == 2
    line = one_line(capsys.readouterr().err)
    assert expected in line
    assert len(line) < 800


@pytest.mark.parametrize("args", [["threads", "\u202e" * 2_000], ["\x9b" * 2_000]])
def test_a_huge_argument_of_control_characters_is_cut_once_made_visible(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(args) == 2
    line = one_line(capsys.readouterr().err)
    assert len(line) < 800 and "\u202e" not in line and "\x9b" not in line


def test_a_huge_decision_is_echoed_cut_short(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refund = "Refund ORD-005, it crackles at any volume"
    assert main(["chat", "r1", refund, "--customer", "Sam", "--offline"]) == 0
    capsys.readouterr()
    assert main(["resume", "r1", "approve" + LONG, "--offline"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "(10,007 characters) is not an option" in line
    assert len(line) < 800


def test_a_log_file_that_cannot_be_written_prints_no_traceback(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # On a full disk every log record printed logging's "--- Logging error ---" traceback to
    # stderr, over the one line the command says.
    assert main(["threads"]) == 0
    handler = next(h for h in logging.getLogger().handlers if getattr(h, "shopbot", False))
    assert isinstance(handler, logging.FileHandler)

    class FullDisk(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    full: Any = FullDisk()
    file = handler.setStream(full)
    try:
        logging.getLogger("shopbot.test").error("no room for this")
    finally:
        if file is not None:
            handler.setStream(file)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("when", ["_prune", "aclose"])
def test_a_stop_signal_after_the_turn_ended_hides_nothing(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # SIGTERM lands while the engine tidies up (pruning, closing): the turn is done and
    # stored, so it is reported as such; "terminated" would make a script send it again.
    from agents.runner.engine import ShopBotEngine

    tidy = getattr(ShopBotEngine, when)

    async def signalled(self: ShopBotEngine, *args: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(0)  # the handler runs (the loop reads the signal) before going on
        await asyncio.sleep(0)
        await tidy(self, *args)

    monkeypatch.setattr(ShopBotEngine, when, signalled)
    code = main(["chat", "s1", "Where is ORD-002?", "--customer", "Sam", "--offline", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["status"] == "done" and "In Transit" in json.loads(out)["reply"]
    assert err == ""
    assert main(["threads", "--json"]) == 0
    threads = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(t["thread_id"], t["status"]) for t in threads] == [("s1", "idle")]


def test_a_failure_after_the_json_result_adds_no_second_object(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--json` prints one object: the turn's, when it was printed before closing failed.
    from agents.runner.engine import ShopBotEngine

    real_close = ShopBotEngine.aclose

    async def failing_close(self: ShopBotEngine) -> None:
        await real_close(self)  # (nothing left open for the rest of the test session)
        raise RuntimeError("closing went wrong")

    monkeypatch.setattr(ShopBotEngine, "aclose", failing_close)
    code = main(["chat", "c1", "Where is ORD-002?", "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    (line,) = out.splitlines()
    assert json.loads(line)["status"] == "done"
    assert one_line(err) == "shopbot: unexpected error (RuntimeError): closing went wrong"


def test_ctrl_c_while_the_command_line_is_read_is_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shopbot_tui.cli.main

    def pressed(argv: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(shopbot_tui.cli.main, "parse_command_line", pressed)
    assert main(["threads"]) == 128 + signal.SIGINT
    assert capsys.readouterr().err == "shopbot: interrupted\n"


@pytest.mark.parametrize("command", [[], ["chat"], ["resume"], ["audit"]])
def test_every_argument_says_what_it_is_in_help(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`shopbot chat --help` read "--customer CHAT_CUSTOMER" and listed THREAD and --offline
    with nothing said about them."""
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert "CHAT_" not in shown and "AUDIT_" not in shown, shown
    listed = shown.split("\n\n", 1)[1].splitlines()  # what follows the usage lines
    for number, line in enumerate(listed):
        if not line.startswith("  ") or line.startswith("   ") or line.strip().startswith("{"):
            continue  # not an argument's first line (the sub-commands each have their own)
        said = line.strip().split("  ", 1)
        # The help is on the same line, or on the next one when the name is long.
        following = listed[number + 1] if len(said) == 1 and number + 1 < len(listed) else ""
        assert len(said) == 2 or following.startswith(" " * 8), (line, shown)


def refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line argparse's refusal of `args` prints, and nothing on stdout."""
    assert main(args) == 2
    said = capsys.readouterr()
    assert said.out == ""
    return one_line(said.err)


def test_a_mistyped_command_is_called_unknown_and_the_likely_one_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It read "argument command: invalid choice: 'chta' (choose from 'chat', ...)".
    assert refusal(["chta", "t1", "hi"], capsys) == (
        "shopbot: unknown command 'chta' (did you mean chat?); "
        "commands: chat, resume, threads, show, handled, audit, eval (see `shopbot --help`)"
    )
    assert refusal(["t1", "hi"], capsys) == (
        "shopbot: unknown command 't1'; commands: chat, resume, threads, show, handled, audit, "
        "eval (see `shopbot --help`)"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["chat", "t1", "hi", "--jsn"], "--jsn (did you mean --json?) (see `shopbot chat --help`)"),
        (
            ["audit", "--kinds", "x"],
            "--kinds x (did you mean --kind?) (see `shopbot audit --help`)",
        ),
        (["threads", "extra"], "extra (see `shopbot threads --help`)"),
        (["--offlne"], "--offlne (did you mean --offline?) (see `shopbot --help`)"),
    ],
)
def test_an_argument_nothing_took_is_refused_by_its_command_with_the_likely_option(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    # `shopbot chat t1 hi --jsn` said "unrecognized arguments: --jsn (see `shopbot --help`)",
    # a help that does not list chat's options.
    assert refusal(args, capsys) == f"shopbot: unrecognized arguments: {said}"


def test_a_sub_commands_mistake_points_at_its_own_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `shopbot --help` lists only the sub-commands: THREAD and DECISION are explained in
    # `shopbot resume --help`.
    assert refusal(["resume"], capsys) == (
        "shopbot: the following arguments are required: THREAD, DECISION "
        "(see `shopbot resume --help`)"
    )
    assert refusal(["audit", "--limit", "x"], capsys).endswith("(see `shopbot audit --help`)")


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["chat", "t1", "hi", "--jsn", "--json"], "unrecognized arguments: --jsn"),
        (["chat", "--json"], "the following arguments are required: THREAD, MESSAGE"),
        (["resume", "t1", "--json"], "the following arguments are required: DECISION"),
    ],
)
def test_a_refused_command_line_with_json_still_prints_one_error_object(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], missing: str
) -> None:
    # A script that asked for --json read an empty stdout when the parser refused the line.
    assert main(args) == 2
    said = capsys.readouterr()
    (printed,) = [json.loads(line) for line in said.out.splitlines()]
    assert printed["status"] == "error" and missing in printed["error"]
    # Nothing on the line was understood: no thread is named, none was read.
    assert (printed["thread_id"], printed["reply"], printed["pending"]) == (None, None, None)
    assert one_line(said.err) == f"shopbot: {printed['error']}"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--thread", "t1", "chat", "t2", "hi"], "names the conversation as THREAD"),
        (["--thread", "t1", "resume", "t2", "approve"], "names the conversation as THREAD"),
        (["--thread", "t1", "audit"], "shopbot audit --thread ID"),
        (["--thread", "t1", "threads"], "lists every conversation"),
        (["--customer", "Alex", "resume", "t2", "approve"], "the customer is the one"),
        (["--customer", "Alex", "chat", "t2", "hi", "--customer", "Sam"], "two customers"),
    ],
)
def test_an_app_option_a_command_would_ignore_is_refused_and_nothing_runs(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    # `shopbot --thread t1 chat t2 hi` wrote to t2, the --thread silently dropped.
    assert main(args) == 2
    assert said in one_line(capsys.readouterr().err)
    assert list(home.iterdir()) == []  # refused before any store was opened


# Each sub-command with what it needs to run: a new one must be added here, and so be
# checked below for the app's options it would ignore.
COMMAND_LINES = {
    "chat": ["chat", "t2", "hi"],
    "resume": ["resume", "t2", "approve"],
    "threads": ["threads"],
    "show": ["show", "t2"],
    "handled": ["handled", "t2"],
    "audit": ["audit"],
    "eval": ["eval", "--k", "1"],
}


def test_every_command_refuses_the_apps_options_it_would_ignore(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == set(COMMAND_LINES)
    for command, line in COMMAND_LINES.items():
        assert main(["--thread", "t1", *line]) == 2, command
        assert "--thread before the command" in one_line(capsys.readouterr().err)
        if command != "chat":  # `shopbot --customer NAME chat ...` is chat's customer
            assert main(["--customer", "Alex", *line]) == 2, command
            assert "--customer before the command" in one_line(capsys.readouterr().err)
    assert list(home.iterdir()) == []


def test_one_customer_named_twice_in_other_letters_is_one_customer(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The ownership gate compares names case and spacing aside: so does this check.
    args = ["--customer", "Alex", "chat", "c2", "Where is ORD-001?", "--customer", " alex"]
    assert main([*args, "--offline"]) == 0
    assert "ORD-001" in capsys.readouterr().out


def test_an_option_typed_before_its_command_says_where_it_goes(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "unrecognized arguments: --json (did you mean --json?)".
    assert main(["--json", "threads"]) == 2
    said = capsys.readouterr()
    assert one_line(said.err) == (
        "shopbot: --json goes after the command: `shopbot threads ... --json` "
        "(see `shopbot threads --help`)"
    )
    # JSON was asked for: the error says it in JSON too.
    assert json.loads(said.out) == {"status": "error", "error": one_line(said.err)[9:]}


@pytest.mark.parametrize(
    ("args", "names_a_thread"),
    [
        (["show", "chat", "--json", "--bogus"], True),  # "chat" is the thread here
        (["audit", "--text", "chat", "--json", "--kinds", "x"], False),
        (["handled", "--json"], True),
        (["threads", "--only", "nobody", "--json"], False),
    ],
)
def test_a_refused_command_line_prints_its_own_commands_error_object(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], names_a_thread: bool
) -> None:
    # `show chat --json --bogus` printed chat's error object once, which an `audit --json`
    # reader would take for an event: each command's own object, with its `status`.
    assert main(args) == 2
    said = capsys.readouterr()
    (printed,) = [json.loads(line) for line in said.out.splitlines()]
    assert printed["status"] == "error"
    assert ("thread_id" in printed) is names_a_thread
    assert printed.get("thread_id") is None and "reply" not in printed
    assert one_line(said.err) == f"shopbot: {printed['error']}"


def test_without_json_a_refused_command_line_prints_nothing_on_stdout(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "t1", "hi", "--js", "--bogus"]) == 2  # no abbreviations: not --json
    said = capsys.readouterr()
    assert said.out == ""
    assert "unrecognized arguments" in one_line(said.err)


@pytest.mark.parametrize(
    ("args", "thread_id"),
    [
        (["handled", "nope"], "nope"),
        (["show", "nope"], "nope"),
        (["audit", "--thread", "nope"], None),
        (["handled", "t/../x"], None),  # not a thread id at all: null, not echoed
    ],
)
def test_every_json_command_prints_its_error_object(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], thread_id: str | None
) -> None:
    """`shopbot handled X --json` and `show --json` printed nothing on stdout on an error."""
    assert main([*args, "--json"]) == 2
    said = capsys.readouterr()
    (printed,) = [json.loads(line) for line in said.out.splitlines()]
    assert printed["status"] == "error" and printed.get("thread_id") == thread_id
    assert one_line(said.err) == f"shopbot: {printed['error']}"


def test_a_json_command_failing_on_a_damaged_store_prints_its_error_object(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["chat", "d1", "Where is ORD-002?", "--offline"]) == 0
    capsys.readouterr()
    for suffix in ("-wal", "-shm"):
        (home / f"shopbot.sqlite{suffix}").unlink(missing_ok=True)
    (home / "shopbot.sqlite").write_bytes(b"this is not a database" * 100)
    for args in (["threads", "--json"], ["show", "d1", "--json"]):
        assert main(args) == 2, args
        said = capsys.readouterr()
        (printed,) = [json.loads(line) for line in said.out.splitlines()]
        assert printed["status"] == "error" and "shopbot.sqlite" in printed["error"], printed


def test_the_apps_customer_before_chat_is_the_customer(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--customer", "Alex", "--offline", "chat", "c1", "Where is ORD-001?"]) == 0
    capsys.readouterr()
    assert main(["threads", "--json"]) == 0
    (listed,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (listed["thread_id"], listed["customer"]) == ("c1", "Alex")


def test_threads_only_lists_what_needs_a_person(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = {
        "idle1": "Where is ORD-001?",
        "wait1": "Refund ORD-001, the left earcup stopped working",
        "esc1": "Refund ORD-004, the monitor has dead pixels all over",
        "esc2": "Refund ORD-004 please, the monitor arrived with a cracked stand",
    }
    for thread, message in said.items():
        assert main(["chat", thread, message, "--offline", "--customer", "Alex"]) == 0
    capsys.readouterr()

    def listed(*only: str) -> list[str]:
        assert main(["threads", *only, "--json"]) == 0
        return [json.loads(line)["thread_id"] for line in capsys.readouterr().out.splitlines()]

    assert listed() == ["esc2", "esc1", "wait1", "idle1"]  # most recent first
    assert listed("--only", "waiting") == ["wait1"]
    assert listed("--only", "escalated") == ["esc1", "esc2"]  # escalated longest first
    assert main(["handled", "esc1"]) == 0
    capsys.readouterr()
    assert listed("--only", "escalated") == ["esc2"]


def test_show_prints_a_conversation_as_the_app_shows_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = "Where is ORD-002? \x1b[31m [bold]now[/bold]"
    assert main(["chat", "s1", said, "--offline", "--customer", "Sam"]) == 0
    capsys.readouterr()

    assert main(["show", "s1"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("# ShopBot conversation s1\n") and "- Customer: Sam" in shown
    assert "- Status: idle" in shown
    assert "**Order agent:**" in shown and "In Transit" in shown
    # What the customer typed is text: its escape sequence made visible, its markup literal.
    assert "\x1b" not in shown and "␛" in shown and "\\[bold\\]now" in shown

    assert main(["show", "s1", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["role"] for line in lines] == ["customer", "assistant"]
    assert lines[0]["text"].startswith("Where is ORD-002?") and lines[1]["agent"] == "order_agent"
    assert main(["show", "s1", "--json", "--limit", "1"]) == 0
    (last,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert last == lines[-1]


def test_show_says_what_a_conversation_waits_for(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for thread, said in [
        ("w1", "Refund ORD-001, the left earcup stopped working"),
        ("e1", "Refund ORD-004, the monitor has dead pixels all over"),
    ]:
        assert main(["chat", thread, said, "--offline", "--customer", "Alex"]) == 0
    capsys.readouterr()
    assert main(["show", "w1"]) == 0
    assert "- Status: waiting for a decision (`shopbot resume w1 DECISION`)" in (
        capsys.readouterr().out
    )
    assert main(["show", "e1"]) == 0
    shown = capsys.readouterr().out
    assert "- Status: escalated to a person since 20" in shown
    assert "refund above the auto-refund limit" in shown and "shopbot handled e1" in shown


def test_show_refuses_an_unknown_conversation(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "nobody"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert one_line(said.err) == "shopbot: Unknown thread 'nobody': `shopbot threads` lists them."


def readme_synopsis() -> dict[str, str]:
    """The README's "Command line" block: each command's line(s), by sub-command ("" for
    the TUI)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Command line\n\n```\n", 1)[1].split("```", 1)[0]
    lines: dict[str, str] = {}
    command = ""
    for line in block.splitlines():
        if line.startswith("shopbot"):
            words = line.split()
            command = words[1] if len(words) > 1 and not words[1].startswith("[") else ""
            lines[command] = line
        else:  # a continuation line
            lines[command] += " " + line
    return lines


@pytest.mark.parametrize(
    "command", ["", "chat", "resume", "threads", "show", "handled", "audit", "eval"]
)
def test_the_readme_synopsis_shows_the_options_help_shows(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """README wrote `--since WHEN`, `--text T`, `--limit N` where `--help` said SINCE, TEXT,
    LIMIT, and left out the --offline that chat and resume take."""
    with pytest.raises(SystemExit):
        main([command, "--help"] if command else ["--help"])
    usage = capsys.readouterr().out.split("\n\n", 1)[0]
    option = r"\[(--[a-z]+(?: [A-Z]+)?)\]"
    in_help = set(re.findall(option, usage))
    in_readme = set(re.findall(option, readme_synopsis()[command]))
    assert in_readme == in_help


def test_threads_counts_one_turn_as_one_turn(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It printed "1 turns".
    assert main(["chat", "t1", "Where is ORD-002?"]) == 0
    capsys.readouterr()
    assert main(["threads"]) == 0
    assert capsys.readouterr().out.split("\t")[4] == "1 turn"


def test_resume_above_the_reviewers_limit_is_refused_in_one_line_and_stays_pending(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refund above the auto-refund limit waits for a reviewer whose limit covers it: the
    login name without one is refused (exit 2, one line saying why), and one with it pays."""
    from agents.reviewer import login_name

    (home / "reviewers.toml").write_text('[reviewers]\ndana = "2000.00"\n', encoding="utf-8")
    refund = "Refund ORD-004 please, the monitor has dead pixels"
    assert main(["chat", "big", refund, "--customer", "Alex", "--offline", "--json"]) == 0
    asked = json.loads(capsys.readouterr().out)
    assert asked["status"] == "awaiting_approval"
    assert asked["pending"]["needs_limit"] == "649.00"

    assert main(["resume", "big", "approve", "--offline", "--json"]) == 2
    captured = capsys.readouterr()
    line = one_line(captured.err)
    assert f"{login_name()}'s limit is $500.00" in line and "Nothing was decided" in line
    refused = json.loads(captured.out)
    assert refused["status"] == "error" and refused["pending"]["order_id"] == "ORD-004"

    (home / "reviewers.toml").write_text(
        f'[reviewers]\n"{login_name()}" = "2000.00"\n', encoding="utf-8"
    )
    assert main(["resume", "big", "approve", "--offline", "--json"]) == 0
    paid = json.loads(capsys.readouterr().out)
    assert paid["status"] == "done" and paid["pending"] is None


def test_the_kinds_docs_cli_md_lists_are_the_audit_logs_kinds() -> None:
    """It left out three kinds that `--kind` takes, so a reader never filtered by them."""
    from agents.backend import AUDIT_KINDS

    docs = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    paragraph = docs.split("- `--kind KIND`:", 1)[1].split("\n- ", 1)[0]
    assert set(re.findall(r"`([a-z_]+)`", paragraph)) == set(AUDIT_KINDS)
