"""`shopbot` on PostgreSQL (SHOPBOT_DATABASE_URL): a database it cannot use is one line on
stderr naming the problem, never the password, exit 2, and nothing written anywhere; a
conversation kept there survives such a failure whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Shopbot, one_line_error
from tests.support.engine import files_holding
from tests.support.postgres_cluster import PASSWORD, ROLE, Cluster, free_port

SECRET = "no-such-password-81x"
COMMANDS = [
    ("threads",),
    ("audit",),
    ("chat", "t1", "Where is my order ORD-001?", "--customer", "Alex"),
    ("resume", "t1", "approve"),
]


def refused(shopbot: Shopbot, home: Path, url: str, *argv: str) -> str:
    """`shopbot ARGV` against `url`: exit 2, its one line (checked to hold no password), and
    nothing made in the home."""
    done = shopbot(home, *argv, env={"SHOPBOT_DATABASE_URL": url})
    assert done.returncode == 2, done
    line = one_line_error(done)
    assert SECRET not in line and PASSWORD not in line
    assert done.stdout == ""
    assert not (home / "shopbot.sqlite").exists()  # no home database made in its place
    assert files_holding(home, SECRET) == [] and files_holding(home, PASSWORD) == []
    return line


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
def test_nothing_listening_is_said_in_one_line(
    shopbot: Shopbot, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    port = free_port()
    url = f"postgresql://shopbot:{SECRET}@127.0.0.1:{port}/shopbot"
    line = refused(shopbot, tmp_path, url, *argv)
    assert f"nothing answers at 127.0.0.1:{port}" in line
    assert f"postgresql://shopbot@127.0.0.1:{port}/shopbot" in line  # named, password-less


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://shopbot:pw@localhost/shopbot", "is not a postgresql:// address"),
        (f"postgresql://shopbot:{SECRET}@127.0.0.1:notaport/shopbot", "cannot be read"),
    ],
)
def test_an_address_that_is_not_postgres_is_said_in_one_line(
    shopbot: Shopbot, tmp_path: Path, url: str, said: str
) -> None:
    assert said in refused(shopbot, tmp_path, url, "threads")


def test_a_wrong_password_and_a_missing_database_are_said_in_one_line(
    shopbot: Shopbot, tmp_path: Path, postgres_cluster: Cluster, postgres_url: str
) -> None:
    dbname = postgres_url.rsplit("/", 1)[1]
    wrong = postgres_cluster.url(dbname, password=SECRET)
    for argv in COMMANDS:
        line = refused(shopbot, tmp_path, wrong, *argv)
        assert f"it refused user {ROLE!r}: a wrong password, or no such role" in line
    missing = postgres_cluster.url("no_such_db")
    for argv in COMMANDS:
        line = refused(shopbot, tmp_path, missing, *argv)
        assert "There is no database 'no_such_db'" in line
        assert f"createdb -O {ROLE} no_such_db" in line
    with postgres_cluster.admin() as admin:  # "nothing was created": not the database either
        made = admin.execute("SELECT 1 FROM pg_database WHERE datname = 'no_such_db'")
        assert made.fetchone() is None


@pytest.mark.postgres
def test_a_conversation_in_postgres_survives_a_failed_start_whole(
    shopbot: Shopbot, tmp_path: Path, postgres_cluster: Cluster, postgres_url: str
) -> None:
    env = {"SHOPBOT_DATABASE_URL": postgres_url}
    refund = "I want a refund for ORD-005, the speaker crackles at any volume"
    asked = shopbot(tmp_path, "chat", "r1", refund, "--customer", "Sam", "--json", env=env)
    assert asked.returncode == 0, asked
    assert json.loads(asked.stdout)["status"] == "awaiting_approval"
    assert not (tmp_path / "shopbot.sqlite").exists()  # everything went to PostgreSQL

    dbname = postgres_url.rsplit("/", 1)[1]
    wrong = postgres_cluster.url(dbname, password=SECRET)
    refused(shopbot, tmp_path, wrong, "resume", "r1", "approve")

    done = shopbot(tmp_path, "resume", "r1", "approve", "--json", env=env)
    assert done.returncode == 0, done
    assert json.loads(done.stdout)["status"] == "done"
    again = shopbot(tmp_path, "resume", "r1", "approve", env=env)
    assert again.returncode == 2  # decided once
    events = shopbot(tmp_path, "audit", "--thread", "r1", "--json", env=env)
    kinds = [json.loads(line)["kind"] for line in events.stdout.splitlines()]
    assert kinds.count("refund_processed") == 1
    assert kinds.count("approval_decided") == 1
    assert files_holding(tmp_path, PASSWORD) == []  # nor the right one, in the log file
