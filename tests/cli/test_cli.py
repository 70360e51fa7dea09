"""The `shopbot` command's contract with scripts: exit codes, one-line errors, `--json`
objects and what the listings print. In-process through `main(argv)`, each command started as
a new process would be (`Shopbot` in conftest.py); what needs a real process is in
test_cli_process.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.audit.log import AuditLog
from agents.reviewer import login_name
from agents.store.threads import ThreadRegistry
from tests.cli.conftest import Ran, Shopbot, one_line_error, use_budget
from tests.support.damage import damage_thread_state, filled_audit_log, garble_past_first_page
from tests.support.engine import files_holding
from tests.support.fake_mistral import (
    FAKE_API_KEY,
    FakeMistralServer,
    text,
)

AS_SAM = ("--customer", "Sam", "--offline")
RESULT_KEYS = {"thread_id", "status", "reply", "active_agent", "pending"}


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries a hundredth of a second apart: what a failing provider is told as, not when."""
    use_budget(monkeypatch, base_delay=0.01, max_delay=0.05)


def test_chat_json_contract(shopbot: Shopbot, tmp_path: Path) -> None:
    done = shopbot(
        tmp_path, "chat", "t1", "Where is my order ORD-002?", "--customer", "Sam", "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == RESULT_KEYS
    assert result["thread_id"] == "t1"
    assert result["status"] == "done"
    assert result["active_agent"] == "order_agent"
    assert result["pending"] is None
    assert "In Transit" in result["reply"]


def test_approval_flow_and_its_bad_inputs(shopbot: Shopbot, tmp_path: Path) -> None:
    ask = shopbot(
        tmp_path,
        "chat",
        "r1",
        "Refund ORD-005, it crackles at any volume",
        "--customer",
        "Sam",
        "--json",
    )
    assert ask.returncode == 0, ask.stderr
    pending = json.loads(ask.stdout)["pending"]
    assert json.loads(ask.stdout)["status"] == "awaiting_approval"
    assert pending["kind"] == "refund_approval"
    assert pending["options"] == ["approve", "reject", "escalate"]
    assert pending["order_id"] == "ORD-005" and pending["amount"] == "59.50"

    blocked = shopbot(tmp_path, "chat", "r1", "hello?")
    assert blocked.returncode == 2
    assert "waiting for a decision" in one_line_error(blocked)
    invalid = shopbot(tmp_path, "resume", "r1", "perhaps")
    assert invalid.returncode == 2
    assert "approve, reject, escalate" in one_line_error(invalid)
    unknown = shopbot(tmp_path, "resume", "nobody", "approve")
    assert unknown.returncode == 2
    assert "Unknown thread" in one_line_error(unknown)

    # Still pending after all of that, and answered by a new process.
    approved = shopbot(tmp_path, "resume", "r1", "approve", "--json")
    assert approved.returncode == 0, approved.stderr
    result = json.loads(approved.stdout)
    assert result["status"] == "done" and "REF-ORD-005-" in result["reply"]
    decided = shopbot(tmp_path, "audit", "--thread", "r1", "--kind", "approval_decided", "--json")
    detail = json.loads(decided.stdout)["detail"]
    assert (detail["decision"], detail["decided_by"], detail["via"]) == (
        "approve",
        login_name(),
        "command line",
    )
    again = shopbot(tmp_path, "resume", "r1", "approve")
    assert again.returncode == 2
    assert "no decision pending" in one_line_error(again)


def refused_json(done: Ran) -> dict[str, object]:
    """The object a refused `chat`/`resume --json` prints: exit 2, the stderr line as ever,
    and that same line as the object's `error`."""
    assert done.returncode == 2, done.stderr
    said = one_line_error(done)
    result = json.loads(done.stdout)
    assert set(result) == RESULT_KEYS | {"error"}
    assert (result["status"], result["reply"]) == ("error", None)
    assert said == f"shopbot: {result['error']}"
    return result


def test_json_refusals_print_one_error_object_and_leave_the_decision_pending(
    shopbot: Shopbot,
    tmp_path: Path,
) -> None:
    # A script reading `--json` got an empty stdout for each of these (json.loads failed).
    empty = refused_json(shopbot(tmp_path, "chat", "n1", "   ", "--json"))
    assert (empty["thread_id"], empty["active_agent"], empty["pending"]) == ("n1", None, None)
    assert "empty" in str(empty["error"])
    unknown = refused_json(shopbot(tmp_path, "resume", "nobody", "approve", "--json"))
    assert (unknown["thread_id"], unknown["active_agent"], unknown["pending"]) == (
        "nobody",
        None,
        None,
    )
    assert "Unknown thread" in str(unknown["error"])

    assert shopbot(tmp_path, "chat", "o1", "Where is ORD-002?").returncode == 0
    nothing = refused_json(shopbot(tmp_path, "resume", "o1", "approve", "--json"))
    assert (nothing["thread_id"], nothing["active_agent"], nothing["pending"]) == (
        "o1",
        "order_agent",
        None,
    )
    assert "no decision pending" in str(nothing["error"])

    ask = shopbot(
        tmp_path, "chat", "r1", "Refund ORD-005, it crackles", "--customer", "Sam", "--json"
    )
    asked = json.loads(ask.stdout)["pending"]
    not_an_option = refused_json(shopbot(tmp_path, "resume", "r1", "perhaps", "--json"))
    new_message = refused_json(shopbot(tmp_path, "chat", "r1", "hello?", "--json"))
    stale = refused_json(shopbot(tmp_path, "resume", "r1", "approve", "--request", "x", "--json"))
    for refused in (not_an_option, new_message, stale):
        assert refused["thread_id"] == "r1" and refused["active_agent"] == "refund_agent"
        assert refused["pending"] == asked  # shown, and still the one waiting
    assert "not an option" in str(not_an_option["error"])
    assert "waiting for a decision" in str(new_message["error"])
    approved = shopbot(tmp_path, "resume", "r1", "approve", "--json")
    assert approved.returncode == 0 and json.loads(approved.stdout)["status"] == "done"


def test_json_refusals_before_the_engine_opens_print_the_object_too(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    # A setting refused before any thread is looked at, and an id that names no thread.
    bad_key = {"MISTRAL_API_KEY": "two words"}
    setting = refused_json(shopbot(tmp_path, "chat", "k1", "hi", "--json", env=bad_key))
    assert (setting["thread_id"], setting["active_agent"], setting["pending"]) == (
        "k1",
        None,
        None,
    )
    not_an_id = refused_json(shopbot(tmp_path, "resume", "bad id!", "approve", "--json"))
    assert not_an_id["thread_id"] is None
    assert "Invalid thread id" in str(not_an_id["error"])


def test_resume_with_the_request_named_never_decides_one_asked_anew(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    refund = "Refund ORD-005, it crackles at any volume"
    ask = shopbot(tmp_path, "chat", "rq", refund, "--customer", "Sam", "--json")
    first = json.loads(ask.stdout)["pending"]["request_id"]
    # Meanwhile another script rejects it, and the customer asks again: a new request.
    assert shopbot(tmp_path, "resume", "rq", "reject", "--request", first).returncode == 0
    again = shopbot(tmp_path, "chat", "rq", f"{refund}, please reconsider", "--json")
    second_pending = json.loads(again.stdout)["pending"]
    second = second_pending["request_id"]
    assert second != first and len(second) == 12
    # The new request says how the last one ended, for whoever decides it.
    (before,) = second_pending["decided_before"]
    assert (before["decision"], before["via"], before["thread_id"]) == (
        "reject",
        "command line",
        "rq",
    )
    # "approve" meant the first request: nothing is decided, the new one still waits.
    stale = shopbot(tmp_path, "resume", "rq", "approve", "--request", first)
    assert stale.returncode == 2
    assert "now waits for another decision" in one_line_error(stale)
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        info = registry.get("rq")
        assert info is not None and info.status == "awaiting_approval"
    done = shopbot(tmp_path, "resume", "rq", "approve", "--request", second, "--json")
    assert done.returncode == 0, done.stderr
    assert "REF-ORD-005-" in json.loads(done.stdout)["reply"]


def test_plain_text_output_says_how_to_decide(shopbot: Shopbot, tmp_path: Path) -> None:
    done = shopbot(
        tmp_path, "chat", "r2", "Refund ORD-001, the left earcup broke", "--customer", "Alex"
    )
    assert done.returncode == 0
    assert "Waiting for approval: refund of ORD-001" in done.stdout
    assert "shopbot resume r2 approve|reject|escalate --request " in done.stdout
    assert "decided before" not in done.stdout
    assert shopbot(tmp_path, "resume", "r2", "escalate").returncode == 0
    again = shopbot(tmp_path, "chat", "r2", "Refund ORD-001 please, the left earcup is broken")
    assert f"; decided before: escalated by {login_name()} (command line), " in again.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("chat", "t", "   "), "empty"),
        (("chat", "t", "x" * 20_000), "too long"),
        (("chat", "bad/thread", "hi"), "thread id"),
        (("chat", "t"), "required"),
        (("audit", "--kind", "nope"), "unknown kind"),
        (("audit", "--limit", "20000"), "--limit: must be between 1 and 10,000, got 20000"),
        (("audit", "--limit", "0"), "--limit: must be between 1 and 10,000"),
        (("audit", "--limit", "many"), "--limit: not a whole number"),
        (("audit", "--thread", "bad id!"), "--thread: Invalid thread id 'bad id!'"),
        # A mistyped thread printed nothing and exited 0, like a thread with no such event.
        (("audit", "--thread", "nobody"), "Unknown thread 'nobody'"),
        (
            ("frobnicate",),
            "unknown command 'frobnicate'; commands: chat, resume, threads, show, handled, audit",
        ),
    ],
)
def test_bad_usage_exits_2_with_one_line(
    shopbot: Shopbot, tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    done = shopbot(tmp_path, *args)
    assert done.returncode == 2
    assert expected in one_line_error(done)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--customer", "A\x1bB"), ["--customer", "control characters"]),
        (("--customer", "x" * 200), ["--customer", "too long"]),
        (("--thread", "bad/thread"), ["--thread"]),
        (("--thread", "bad/thread", "--customer", "A\x07"), ["--thread", "--customer"]),
    ],
)
def test_the_app_refuses_to_start_with_a_customer_or_thread_it_cannot_use(
    shopbot: Shopbot, tmp_path: Path, args: tuple[str, ...], expected: list[str]
) -> None:
    # Starting anyway without the customer would switch the ownership gate off.
    done = shopbot(tmp_path, "--offline", *args)
    assert done.returncode == 2
    line = one_line_error(done)
    assert all(part in line for part in expected)
    assert "Nothing was started." in line
    assert done.stdout == ""  # no screen was drawn


def test_threads_and_audit_json_lines(shopbot: Shopbot, tmp_path: Path) -> None:
    shopbot(tmp_path, "chat", "a1", "Where is ORD-001?", "--customer", "Alex")
    shopbot(tmp_path, "chat", "a2", "Where is ORD-002?", "--customer", "Sam")
    threads = [
        json.loads(line) for line in shopbot(tmp_path, "threads", "--json").stdout.splitlines()
    ]
    assert [t["thread_id"] for t in threads] == ["a2", "a1"]
    assert threads[0]["customer"] == "Sam"
    audit = shopbot(tmp_path, "audit", "--thread", "a1", "--json")
    events = [json.loads(line) for line in audit.stdout.splitlines()]
    assert events and all(
        set(e) == {"id", "ts", "thread_id", "agent", "kind", "detail"} for e in events
    )
    assert {e["thread_id"] for e in events} == {"a1"}
    assert [e["id"] for e in events] == sorted((e["id"] for e in events), reverse=True)
    tools = shopbot(tmp_path, "audit", "--kind", "tool_called", "--json").stdout.splitlines()
    assert {json.loads(line)["detail"]["tool"] for line in tools} == {"lookup_order"}


def test_audit_of_a_known_thread_with_no_matching_event_prints_nothing(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    shopbot(tmp_path, "chat", "a1", "Where is ORD-001?", "--customer", "Alex")
    done = shopbot(tmp_path, "audit", "--thread", "a1", "--kind", "provider_error")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_threads_lists_every_conversation(shopbot: Shopbot, tmp_path: Path) -> None:
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        for number in range(250):
            registry.ensure(f"t-{number:03d}", customer="Sam")
    listed = shopbot(tmp_path, "threads", "--json").stdout.splitlines()
    assert len(listed) == 250  # not only the 200 the app's list shows at first
    assert json.loads(listed[-1])["thread_id"] == "t-000"


def test_audit_text_finds_events_showing_every_term_as_printed(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    shopbot(tmp_path, "chat", "s1", "Where is my order ORD-001?", "--customer", "Alex")
    misread = "I want a refund for ORD-01, it broke after a week"
    shopbot(tmp_path, "chat", "s2", misread, "--customer", "Alex")
    failed = shopbot(tmp_path, "audit", "--text", "gate=order_id ok=false").stdout.splitlines()
    assert failed and all("  gate_failed  gate=order_id ok=false " in line for line in failed)
    passed = shopbot(tmp_path, "audit", "--thread", "s1", "--text", "order_id=ORD-001 ok=true")
    lines = passed.stdout.splitlines()
    assert len(lines) >= 2 and all("  gate_passed  " in line for line in lines)
    assert all(" ok=true " in line for line in lines)
    # Quotes and FTS5 operators are text: an answer, never an SQL error.
    for search in ['"', '"unterminated', "NEAR(ok", "ok=true AND -gate*", "(", ":"]:
        done = shopbot(tmp_path, "audit", "--text", search)
        assert (done.returncode, done.stderr) == (0, ""), search
    too_many = shopbot(tmp_path, "audit", "--text", " ".join(f"w{n}" for n in range(101)))
    assert too_many.returncode == 2
    assert one_line_error(too_many).startswith("shopbot: The search has 101 words; at most 100")


def test_audit_since_and_until_take_dates_and_times_in_any_zone(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    with AuditLog(tmp_path / "shopbot.sqlite") as audit:
        audit.append_many(
            {"kind": "turn_started", "thread_id": thread, "ts": ts}
            for thread, ts in [
                ("late-night", "2026-11-29T23:00:00.000Z"),
                ("small-hours", "2026-11-30T01:00:00.000Z"),
                ("morning", "2026-11-30T10:00:00.000Z"),
            ]
        )

    def threads(*window: str) -> list[str]:
        done = shopbot(tmp_path, "audit", *window, "--json")
        assert done.returncode == 0, done.stderr
        return [json.loads(line)["thread_id"] for line in done.stdout.splitlines()]

    assert threads("--since", "2026-11-30") == ["morning", "small-hours"]
    assert threads("--until", "2026-11-30T10:00") == ["small-hours", "late-night"]
    # 02:00 at UTC+1 is 01:00 UTC: `--since` includes it, `--until` does not.
    assert threads("--since", "2026-11-30T02:00+01:00") == ["morning", "small-hours"]
    assert threads("--since", "2026-11-29", "--until", "2026-11-30T02:00+01:00") == ["late-night"]
    bad = shopbot(tmp_path, "audit", "--since", "yesterday")
    assert bad.returncode == 2
    assert "not an ISO-8601 date or time: 'yesterday'" in one_line_error(bad)


@pytest.mark.usefixtures("quick_retries")
def test_provider_down_exits_1_and_keeps_the_thread(shopbot: Shopbot, tmp_path: Path) -> None:
    dead = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": "http://127.0.0.1:9/v1"}
    done = shopbot(tmp_path, "chat", "p1", "Where is ORD-001?", "--json", env=dead)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert (result["status"], result["reply"]) == ("error", None)  # nothing said: null, not ""
    assert "cannot be reached" in one_line_error(done)
    assert one_line_error(done) == f"shopbot: {result['error']}"
    threads = [
        json.loads(line) for line in shopbot(tmp_path, "threads", "--json").stdout.splitlines()
    ]
    assert threads[0]["thread_id"] == "p1" and threads[0]["status"] == "error"
    # The thread is usable afterwards, offline this time.
    retry = shopbot(tmp_path, "chat", "p1", "Where is ORD-001?", "--offline", "--json")
    assert retry.returncode == 0 and json.loads(retry.stdout)["status"] == "done"


def test_a_provider_asking_for_an_hour_fails_at_once_and_says_how_long(
    shopbot: Shopbot, tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    fake_mistral.fail_next(429, retry_after=3600)
    done = shopbot(tmp_path, "chat", "w1", "Where is ORD-001?", "--json", env=env)
    assert done.returncode == 1 and json.loads(done.stdout)["status"] == "error"
    assert fake_mistral.received == 1  # not waited for, not asked again
    said = one_line_error(done)
    assert "asks to wait 60 min, longer than ShopBot waits (30 s); try again in 60 min." in said
    assert "in a moment" not in said


def test_damaged_database_is_reported_and_left_alone(shopbot: Shopbot, tmp_path: Path) -> None:
    damaged = tmp_path / "shopbot.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    done = shopbot(tmp_path, "chat", "t", "hello")
    assert done.returncode == 2
    assert str(damaged) in one_line_error(done)
    assert damaged.read_bytes() == b"this is not a database" * 100


@pytest.mark.parametrize(
    ("command", "damaged_file"),
    [
        (("threads",), "threads.sqlite"),
        (("threads", "--json"), "threads.sqlite"),
        (("audit",), "audit.sqlite"),
        (("audit", "--thread", "t1", "--json"), "audit.sqlite"),
    ],
)
def test_listing_commands_report_a_damaged_database_like_chat_does(
    shopbot: Shopbot, tmp_path: Path, command: tuple[str, ...], damaged_file: str
) -> None:
    damaged = tmp_path / damaged_file
    damaged.write_bytes(b"this is not a database" * 100)
    done = shopbot(tmp_path, *command)
    assert done.returncode == 2
    line = one_line_error(done)
    assert str(damaged) in line and "damaged" in line and "unexpected" not in line
    assert damaged.read_bytes() == b"this is not a database" * 100


@pytest.mark.parametrize("inside", ["", "sub"])
def test_home_that_is_a_file_is_named_and_exits_2(
    shopbot: Shopbot, tmp_path: Path, inside: str
) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    home = a_file / inside if inside else a_file
    done = shopbot(home, "threads")
    assert done.returncode == 2
    line = one_line_error(done)
    assert line.startswith(f"shopbot: Cannot use the ShopBot folder {home}: ")
    assert "set SHOPBOT_HOME" in line
    assert a_file.read_text() == "x"


@pytest.mark.usefixtures("quick_retries")
def test_api_key_never_reaches_output_logs_or_audit(
    shopbot: Shopbot, tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.fail_next(503, times=10)
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    done = shopbot(tmp_path, "chat", "k1", "hello", "--json", env=env)
    assert done.returncode == 1
    assert not files_holding(tmp_path, FAKE_API_KEY)
    assert FAKE_API_KEY not in done.stdout + done.stderr


def test_proxy_credentials_in_the_base_url_never_reach_output_logs_or_audit(
    shopbot: Shopbot, tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    # httpx sends the URL's userinfo as Basic auth instead of the key: the fake refuses it
    # (401), and the error text quotes the whole URL, userinfo included.
    password = "hunter2secret"
    with_userinfo = fake_mistral.base_url.replace("http://", f"http://proxyuser:{password}@")
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": with_userinfo}
    done = shopbot(tmp_path, "chat", "u1", "hello", "--json", env=env)
    assert done.returncode == 1
    fake_mistral.acknowledge_problems()
    errors = shopbot(tmp_path, "audit", "--kind", "provider_error", "--json").stdout.splitlines()
    assert "[REDACTED]@127.0.0.1" in json.loads(errors[0])["detail"]["error"]
    assert not files_holding(tmp_path, password)
    assert password not in done.stdout + done.stderr


def test_an_api_key_with_a_line_break_is_refused_before_anything_happens(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    env = {"MISTRAL_API_KEY": "Part1secret\nPart2secret\n"}
    done = shopbot(tmp_path, "chat", "k1", "hello", "--json", env=env)
    assert done.returncode == 2
    line = one_line_error(done)
    assert "MISTRAL_API_KEY" in line
    assert "Part1" not in done.stdout + done.stderr and "Part2" not in done.stdout + done.stderr
    assert shopbot(tmp_path, "threads").stdout == ""
    # What needs no key works with the mistyped one: listing, the audit log, --offline.
    listed = shopbot(tmp_path, "threads", env=env)
    assert listed.returncode == 0 and listed.stdout == ""
    offline = shopbot(tmp_path, "chat", "k1", "Where is ORD-002?", "--offline", "--json", env=env)
    assert offline.returncode == 0 and "In Transit" in json.loads(offline.stdout)["reply"]


def test_undecodable_bytes_in_a_message_are_replaced_and_the_turn_is_answered(
    shopbot: Shopbot,
    tmp_path: Path,
) -> None:
    # "\udcff" is how Python hands over the byte \xff of a non-UTF-8 argv (surrogateescape).
    done = shopbot(tmp_path, "chat", "k2", "Where is ORD-002 \udcff", "--offline", "--json")
    assert done.returncode == 0, done.stderr
    assert "In Transit" in json.loads(done.stdout)["reply"]
    # Nothing in the JSON shows what was sent: one line says so.
    assert (
        done.stderr
        == "shopbot: note: 1 byte(s) of MESSAGE were not UTF-8 and were sent as \ufffd.\n"
    )
    [thread] = [
        json.loads(line) for line in shopbot(tmp_path, "threads", "--json").stdout.splitlines()
    ]
    assert (thread["thread_id"], thread["title"], thread["turns"]) == (
        "k2",
        "Where is ORD-002 \ufffd",
        1,
    )


@pytest.mark.parametrize(
    ("customer", "reason"),
    [
        ("Sam \udcff", "not valid text"),
        ("Sam\u202eevil", "invisible formatting"),
        ("S\u200bam", "invisible formatting"),
        # A script's unset variable: run anyway, no order would be checked against anyone.
        ("", "--customer: is blank"),
        ("   ", "--customer: is blank"),
    ],
)
def test_a_customer_name_blank_or_with_hidden_characters_is_refused_and_nothing_is_stored(
    shopbot: Shopbot, tmp_path: Path, customer: str, reason: str
) -> None:
    done = shopbot(tmp_path, "chat", "k3", "Where is ORD-002?", "--customer", customer, "--offline")
    assert done.returncode == 2
    assert reason in one_line_error(done)
    assert shopbot(tmp_path, "threads").stdout == ""


def test_threads_shows_a_stored_right_to_left_override_visibly(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    # A name stored before names were vetted: listing it must not reorder the terminal.
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as threads:
        threads.ensure("old", customer="Sam\u202eevil\u2066")
    listed = shopbot(tmp_path, "threads")
    assert listed.returncode == 0
    assert "\u202e" not in listed.stdout and "\u2066" not in listed.stdout
    assert "Sam\\u202eevil\\u2066" in listed.stdout


# An undecodable byte (how Python hands over \xff of a non-UTF-8 argv), an escape sequence,
# a right-to-left override, a line break: what a person may type, by mistake or not.
HOSTILE = "t\udcff\x1b[31m\u202e\n2"


def assert_shown_safely(line: str) -> None:
    assert "\\xff" in line  # the byte, readable
    assert "\\udc" not in line and "\ufffd" not in line
    assert "\x1b" not in line and "\u202e" not in line


@pytest.mark.parametrize(
    "args",
    [
        ("chat", HOSTILE, "hi"),  # the thread id
        ("resume", HOSTILE, "approve"),
        ("audit", "--thread", HOSTILE),
        ("audit", "--kind", HOSTILE),
        ("audit", "--limit", HOSTILE),
        ("--offline", "--thread", HOSTILE),  # the TUI's, refused before it starts
        (HOSTILE,),  # an unknown command, quoted with repr()
        ("threads", HOSTILE),  # argparse: unrecognized arguments, quoted raw
        ("threads", f"--json={HOSTILE}"),  # argparse: ignored explicit argument
    ],
)
def test_input_echoed_in_an_error_is_one_readable_safe_line(
    shopbot: Shopbot, tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = shopbot(tmp_path, *args)
    assert done.returncode == 2
    assert_shown_safely(one_line_error(done))
    assert done.stdout == ""


def test_a_base_url_that_cannot_be_one_is_refused_before_anything_happens(
    shopbot: Shopbot,
    tmp_path: Path,
) -> None:
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": "http://127.0.0.1:99999/v1"}
    done = shopbot(tmp_path, "chat", "b1", "hello", "--json", env=env)
    assert done.returncode == 2, done.stderr
    assert "MISTRAL_BASE_URL" in one_line_error(done)
    assert shopbot(tmp_path, "threads").stdout == ""


def test_a_decision_that_is_not_an_option_is_echoed_safely(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    ask = shopbot(tmp_path, "chat", "r1", "Refund ORD-005, it crackles at any volume", *AS_SAM)
    assert ask.returncode == 0, ask.stderr
    done = shopbot(tmp_path, "resume", "r1", f"approve{HOSTILE}", "--offline")
    assert done.returncode == 2
    line = one_line_error(done)
    assert "is not an option" in line
    assert_shown_safely(line)


def test_a_key_pasted_as_the_decision_is_not_echoed(shopbot: Shopbot, tmp_path: Path) -> None:
    ask = shopbot(tmp_path, "chat", "r2", "Refund ORD-005, it crackles at any volume", *AS_SAM)
    assert ask.returncode == 0, ask.stderr
    done = shopbot(tmp_path, "resume", "r2", FAKE_API_KEY, "--offline")
    assert done.returncode == 2
    line = one_line_error(done)
    assert "is not an option" in line and "[REDACTED]" in line
    assert FAKE_API_KEY[:12] not in line


def test_a_data_folder_named_with_an_undecodable_byte_is_named_readably(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    a_file = tmp_path / "data\udcff"
    a_file.write_text("x")
    done = shopbot(a_file, "threads")
    assert done.returncode == 2
    line = one_line_error(done)
    assert f"{tmp_path}/data\\xff" in line
    assert "\\udc" not in line


@pytest.mark.parametrize("message", ["\udcff\udcfe", " \udcff \udc80 "])
def test_a_message_of_only_undecodable_bytes_is_refused_and_nothing_is_stored(
    shopbot: Shopbot, tmp_path: Path, message: str
) -> None:
    done = shopbot(tmp_path, "chat", "u1", message, "--offline", "--json")
    refused = refused_json(done)
    assert "not valid text" in str(refused["error"])
    assert (refused["active_agent"], refused["pending"]) == (None, None)
    assert shopbot(tmp_path, "threads").stdout == ""


# Raw in JSON (only C0 must be escaped there), each would reach the terminal of a person
# reading the output.
STEERING = "Your refund \u202eof $14.99\u202c for ORD\u200f-001\x9b[2J is on\u2028its way."


def test_json_output_is_valid_and_escapes_what_would_steer_a_terminal(
    shopbot: Shopbot, tmp_path: Path, fake_mistral: FakeMistralServer
) -> None:
    fake_mistral.script(text(STEERING), text(STEERING))
    env = {"MISTRAL_API_KEY": FAKE_API_KEY, "MISTRAL_BASE_URL": fake_mistral.base_url}
    as_json = shopbot(
        tmp_path, "chat", "j1", "Where is ORD-001?", "--customer", "Alex", "--json", env=env
    )
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["reply"] == STEERING  # the data, unchanged
    plain = shopbot(tmp_path, "chat", "j1", "And ORD-004?", env=env)
    assert plain.returncode == 0, plain.stderr
    for out in (as_json.stdout, plain.stdout):
        assert not {"\u202e", "\u202c", "\u200f", "\x9b"}.intersection(out), out
    # A line separator is text on a terminal, but splitlines() breaks a JSON line at it.
    assert "\u2028" not in as_json.stdout and len(as_json.stdout.splitlines()) == 1
    assert "\\u202eof $14.99\\u202c for ORD\\u200f-001\\x9b[2J" in plain.stdout


def test_threads_and_audit_json_escape_what_would_steer_a_terminal(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    # Stored before names and details were vetted, or by a model: listing must stay safe.
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as threads:
        threads.ensure("old", customer="Sam\u202eevil\u200e")
    with AuditLog(tmp_path / "shopbot.sqlite") as audit:
        audit.append("tool_called", thread_id="old", detail={"tool": STEERING})
    for command, field, value in [
        (("threads", "--json"), "customer", "Sam\u202eevil\u200e"),
        (("audit", "--json"), "detail", {"tool": STEERING}),
    ]:
        listed = shopbot(tmp_path, *command)
        assert listed.returncode == 0, listed.stderr
        assert not {"\u202e", "\u200e", "\x9b", "\u2028"}.intersection(listed.stdout)
        assert json.loads(listed.stdout)[field] == value


def test_the_command_line_names_a_log_damaged_past_its_first_page(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    assert shopbot(tmp_path, "chat", "t1", "Where is ORD-002?").returncode == 0
    path = tmp_path / "shopbot.sqlite"
    filled_audit_log(path)
    damaged = garble_past_first_page(path)
    done = shopbot(tmp_path, "audit", "--text", "nothing-like-this", "--limit", "500")
    assert done.returncode == 2
    line = one_line_error(done)
    assert f"at {path} is damaged" in line and "unexpected" not in line
    assert path.read_bytes() == damaged


def test_the_command_line_exits_2_for_a_damaged_conversation(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    assert shopbot(tmp_path, "chat", "hurt", "Where is ORD-001?").returncode == 0
    damage_thread_state(tmp_path, "hurt")
    done = shopbot(tmp_path, "chat", "hurt", "Where is ORD-001 now?")
    assert done.returncode == 2
    assert "stored state of conversation hurt" in one_line_error(done)


def test_threads_say_which_conversations_are_escalated(shopbot: Shopbot, tmp_path: Path) -> None:
    shopbot(
        tmp_path,
        "chat",
        "big",
        "Refund ORD-004 please, the monitor has dead pixels",
        "--customer",
        "Alex",
    )
    shopbot(tmp_path, "chat", "calm", "Where is ORD-002?", "--customer", "Sam")
    threads = {
        t["thread_id"]: t
        for t in map(json.loads, shopbot(tmp_path, "threads", "--json").stdout.splitlines())
    }
    assert threads["calm"]["escalation"] is None
    escalation = threads["big"]["escalation"]
    assert escalation["reason"] == "refund above the auto-refund limit"
    assert escalation["agent"] == "refund_agent" and escalation["since"].endswith("Z")
    rows = {
        line.split("\t")[0]: line.split("\t")
        for line in shopbot(tmp_path, "threads").stdout.splitlines()
    }
    assert (rows["big"][1], rows["calm"][1]) == ("escalated", "idle")


def test_handled_closes_an_escalation_once_in_the_callers_name(
    shopbot: Shopbot, tmp_path: Path
) -> None:
    over_limit = "Refund ORD-004 please, the monitor has dead pixels"
    shopbot(tmp_path, "chat", "big", over_limit, "--customer", "Alex")
    shopbot(tmp_path, "chat", "calm", "Where is ORD-002?", "--customer", "Sam")
    done = shopbot(tmp_path, "handled", "big", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    closed = json.loads(done.stdout)
    assert (closed["thread_id"], closed["reason"]) == ("big", "refund above the auto-refund limit")
    name = login_name()
    with ThreadRegistry(tmp_path / "shopbot.sqlite") as registry:
        assert registry.escalations() == []
        assert registry.lines("big")[-1].text == f"escalation handled by {name} (command line)"
    events = shopbot(tmp_path, "audit", "--kind", "escalation_closed", "--json").stdout.splitlines()
    assert [json.loads(e)["detail"]["decided_by"] for e in events] == [name]
    # Handled already, never escalated, unknown: exit 2, one line, nothing recorded.
    for thread, said in [
        ("big", "is not escalated (or was marked handled already); nothing changed."),
        ("calm", "is not escalated (or was marked handled already); nothing changed."),
        ("nobody", "Unknown thread 'nobody'"),
    ]:
        refused = shopbot(tmp_path, "handled", thread)
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert refused.stdout == "" and refused.stderr.count("\n") == 1
    events = shopbot(tmp_path, "audit", "--kind", "escalation_closed", "--json").stdout.splitlines()
    assert len(events) == 1
