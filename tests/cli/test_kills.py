"""`shopbot chat` and `shopbot resume` killed (-9) at random moments and right after each
audit event of a refund, and after every kill: at most one refund per order, the ledger and
the audit log agreeing, no approval lost, and a database SQLite finds sound.

A marked group (`-m kills`, run by .ci/run): it starts some fifty processes.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from agents.store.home import forget_checked
from shopbot_tui.cli.main import main
from tests.cli.conftest import audit_events, run_json

pytestmark = pytest.mark.kills

REPO = Path(__file__).resolve().parents[2]
REFUND = "I want a refund for ORD-005, the speaker crackles at any volume"
ASK = ["chat", "k", REFUND, "--customer", "Sam", "--offline"]
APPROVE = ["resume", "k", "approve", "--offline"]
# Random kills of each command, seeded: a failure names the moment it chose.
RANDOM_KILLS = 5


def killed(home: Path, argv: list[str], *, after: tuple[str, int] | None, at: float | None) -> int:
    """Run `shopbot ARGV` in its own process, killed after the audit event `after` (kind, nth)
    is stored or `at` seconds after its first audit event (its turn under way: the seconds
    before are imports, where a kill tests nothing); its exit code (-9 when it was killed)."""
    if after is not None:
        command = [sys.executable, "-m", "tests.support.kill_after", after[0], str(after[1])]
    else:
        command = [str(Path(sys.executable).with_name("shopbot"))]
    env = {"SHOPBOT_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [*command, *argv], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as process:
        if at is not None:
            before = last_event(home)
            while last_event(home) == before and process.poll() is None:
                time.sleep(0.01)
            try:
                process.wait(timeout=at)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait(timeout=120)
        return process.returncode


def last_event(home: Path) -> int:
    """The id of the home's latest audit event (0: none, or no database yet)."""
    database = home / "shopbot.sqlite"
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as conn:
            (latest,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
        conn.close()
    except sqlite3.Error:
        return 0
    return int(latest)


def check(home: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The invariants after a kill; the refunds paid (order ids)."""
    database = home / "shopbot.sqlite"
    if not database.exists():
        return []  # (killed before the home was made: nothing to check)
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        ledger = conn.execute("SELECT order_id, reference FROM refunds").fetchall()
    conn.close()
    paid = [order for order, _ in ledger]
    assert all(count == 1 for count in Counter(paid).values()), ledger
    events = [e for e in audit_events(capsys, "k") if e["kind"] == "refund_processed"]
    logged = sorted((e["detail"]["order_id"], e["detail"]["reference"]) for e in events)
    assert logged == sorted(ledger), (logged, ledger)
    return paid


def recover_and_pay(
    home: Path, capsys: pytest.CaptureFixture[str], *, stored: bool = False
) -> None:
    """After a kill: the approval is still to be given (and pays once) or it was used by the
    one payment made; asked again when the kill took the question with it. `stored`: the
    question was stored before the kill (a killed `resume`), so nothing may take it away."""
    forget_checked()
    paid = check(home, capsys)
    code, said, err = run_json(capsys, *APPROVE)
    if code == 2 and ("no decision pending" in err or "Unknown thread" in err):
        assert paid or not stored, f"the approval waiting was lost: {err}"
        if not paid:
            # The question never reached the store (killed while asking, or before the
            # conversation was even made): ask it again.
            code, said, err = run_json(capsys, *ASK)
            assert code == 0 and said["status"] == "awaiting_approval", (said, err)
            code, said, err = run_json(capsys, *APPROVE)
            assert code == 0, (said, err)
    else:
        assert code == 0 and said["status"] == "done", (said, err)
    assert check(home, capsys) == ["ORD-005"]
    code, said, err = run_json(capsys, *APPROVE)
    assert code == 2 and "no decision pending" in err, (said, err)
    assert check(home, capsys) == ["ORD-005"]


def kinds_of(capsys: pytest.CaptureFixture[str], since: int) -> list[str]:
    return [e["kind"] for e in audit_events(capsys, "k") if e["id"] > since]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The audit events of an asking `chat` and of an approving `resume`, and their times."""
    home = tmp_path_factory.mktemp("reference")
    # (The times from the first audit event to the end: where a random kill may land.)
    asked = turn_seconds(home, ASK)
    approved = turn_seconds(home, APPROVE)
    with sqlite3.connect(home / "shopbot.sqlite") as conn:
        rows = conn.execute("SELECT id, kind, detail FROM events WHERE thread_id = 'k'").fetchall()
    conn.close()
    decided = next(i for i, (_, kind, _) in enumerate(rows) if kind == "approval_decided")
    return {
        "chat": [kind for _, kind, _ in rows[:decided]],
        "resume": [kind for _, kind, _ in rows[decided:]],
        "chat_seconds": asked,
        "resume_seconds": approved,
    }


def turn_seconds(home: Path, argv: list[str]) -> float:
    before = last_event(home)
    env = {"SHOPBOT_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    shopbot = str(Path(sys.executable).with_name("shopbot"))
    with subprocess.Popen([shopbot, *argv], cwd=REPO, env=env, stdout=subprocess.DEVNULL) as run:
        while last_event(home) == before and run.poll() is None:
            time.sleep(0.01)
        started = time.monotonic()
        assert run.wait(timeout=120) == 0
    return max(time.monotonic() - started, 0.05)


def moments(kinds: object) -> list[tuple[str, int]]:
    """Each event of a command, as (kind, its occurrence among that kind)."""
    assert isinstance(kinds, list)
    seen: Counter[str] = Counter()
    found = []
    for kind in kinds:
        seen[kind] += 1
        found.append((str(kind), seen[kind]))
    return found


def test_the_reference_refund_writes_the_events_a_kill_is_aimed_at(
    reference: dict[str, object],
) -> None:
    assert "approval_requested" in reference["chat"]  # type: ignore[operator]
    assert "refund_processed" in reference["resume"]  # type: ignore[operator]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHOPBOT_HOME", str(tmp_path))
    for name in ("MISTRAL_API_KEY", "MISTRAL_BASE_URL", "LANGSMITH_TRACING"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_resume_killed_right_after_each_of_its_audit_events(
    home: Path, capsys: pytest.CaptureFixture[str], reference: dict[str, object]
) -> None:
    for moment in moments(reference["resume"]):
        folder = home / f"after-{moment[0]}-{moment[1]}"
        folder.mkdir()
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SHOPBOT_HOME", str(folder))
            _, said, _ = run_json(capsys, *ASK)
            assert said["status"] == "awaiting_approval"
            assert killed(folder, APPROVE, after=moment, at=None) == -9, moment
            recover_and_pay(folder, capsys, stored=True)


def test_chat_killed_right_after_each_of_its_audit_events(
    home: Path, capsys: pytest.CaptureFixture[str], reference: dict[str, object]
) -> None:
    for moment in moments(reference["chat"]):
        folder = home / f"after-{moment[0]}-{moment[1]}"
        folder.mkdir()
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SHOPBOT_HOME", str(folder))
            assert killed(folder, ASK, after=moment, at=None) == -9, moment
            recover_and_pay(folder, capsys)


@pytest.mark.parametrize("command", ["chat", "resume"])
def test_killed_at_random_moments(
    home: Path, capsys: pytest.CaptureFixture[str], reference: dict[str, object], command: str
) -> None:
    seconds = float(reference[f"{command}_seconds"])  # type: ignore[arg-type]
    chosen = random.Random(f"kills-{command}")
    for attempt in range(RANDOM_KILLS):
        at = chosen.uniform(0.0, seconds)
        folder = home / f"{command}-{attempt}"
        folder.mkdir()
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SHOPBOT_HOME", str(folder))
            if command == "resume":
                _, said, _ = run_json(capsys, *ASK)
                assert said["status"] == "awaiting_approval"
            killed(folder, ASK if command == "chat" else APPROVE, after=None, at=at)
            try:
                recover_and_pay(folder, capsys, stored=command == "resume")
            except AssertionError as exc:
                raise AssertionError(f"killed {command} at {at:.2f} s: {exc}") from exc


def test_a_thread_listed_after_every_kill_reads_sound(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """(The listing reads every conversation a kill left: none fails to read.)"""
    code, _, _ = run_json(capsys, *ASK)
    assert code == 0
    assert killed(home, APPROVE, after=("approval_decided", 1), at=None) == -9
    forget_checked()
    assert main(["threads", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [info["thread_id"] for info in listed] == ["k"]


def test_killed_while_moving_a_home_of_four_files_the_move_is_made_again(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first command after an upgrade, killed mid-move: the database it had begun held
    nothing committed, and the next command took it for a brand-new home (no conversation,
    no decision waiting, an empty ledger: ORD-005 refundable a second time)."""
    from tests.support.legacy_home import split_into_legacy_files

    code, said, _ = run_json(capsys, *ASK)
    assert code == 0 and said["status"] == "awaiting_approval", said
    split_into_legacy_files(home)
    env = {"SHOPBOT_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    moving = subprocess.run(
        [sys.executable, "-m", "tests.support.killed_moving", "threads"],
        cwd=REPO,
        env=env,
        capture_output=True,
        check=False,
    )
    assert moving.returncode == -9, moving.stderr
    forget_checked()
    assert main(["threads", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [info["thread_id"] for info in listed] == ["k"]
    recover_and_pay(home, capsys)
