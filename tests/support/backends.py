"""Both stores a deployment can have, for tests that must hold on each: the home's SQLite
file, and a PostgreSQL database on the throwaway cluster (postgres_cluster.py).

`backend` is parametrised `sqlite` / `postgres`, both in the README's test command (a store
test on PostgreSQL takes a fraction of a second once the cluster runs); `heavy_backend` is
the same pair for the end-to-end engine tests and the whole audit-log suite, whose postgres
runs carry the `postgres` mark
(`pytest -m postgres` runs them, the README's command leaves them out). A test reads and
writes the raw tables through `Backend.query` / `Backend.execute` (`?` placeholders on both),
so what it asserts is what is stored, not what a store says.

The postgres runs skip, saying why, only where PostgreSQL's server programs are not
installed, and never in CI (`CI=true`, as .ci/run and CI services set it): there they fail.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agents.settings import Settings
from agents.store.database import Location, checked_database
from agents.store.postgres.connection import postgres_sql
from agents.store.postgres.database import PostgresDatabase, forget_checked
from tests.support.postgres_cluster import Cluster, server_binaries, start_cluster

# In CI PostgreSQL's programs missing is a failure, not a reason to skip: .ci/run installs
# them, so a skip there would hide that half the store tests never ran.
REQUIRED = os.environ.get("CI", "").lower() == "true"


@dataclass
class Backend:
    name: str  # "sqlite" | "postgres"
    home: Path
    url: str | None = None

    @property
    def postgres(self) -> bool:
        return self.url is not None

    def settings(self, *, offline: bool = True) -> Settings:
        return Settings(home=self.home, force_offline=offline, database_url=self.url)

    def where(self, sqlite_path: Path | None = None) -> Location:
        """The stores' place: `sqlite_path` (else the home's checked database) in SQLite,
        the checked PostgreSQL database otherwise."""
        if self.url is None and sqlite_path is not None:
            return sqlite_path
        return checked_database(self.settings())

    def query(
        self, sql: str, params: Sequence[Any] = (), *, sqlite_path: Path | None = None
    ) -> list[tuple[Any, ...]]:
        """Rows of `sql`, read straight from the database (not through a store)."""
        if self.url is None:
            path = sqlite_path or self.settings().database_path
            with sqlite3.connect(path) as conn:
                rows = conn.execute(sql, params).fetchall()
            conn.close()
            return rows
        with psycopg.connect(self.url) as conn:
            return list(conn.execute(postgres_sql(sql), list(params)).fetchall())

    def execute(
        self, sql: str, params: Sequence[Any] = (), *, sqlite_path: Path | None = None
    ) -> None:
        """Run `sql` straight on the database, committed."""
        if self.url is None:
            path = sqlite_path or self.settings().database_path
            with sqlite3.connect(path) as conn:
                conn.execute(sql, params)
            conn.close()
            return
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(postgres_sql(sql), list(params))


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway cluster for the run, started when a test first needs it."""
    bindir = server_binaries()
    if bindir is None:
        reason = (
            "PostgreSQL's server programs (initdb, pg_ctl) are not installed, neither under "
            "/usr/lib/postgresql/*/bin nor on PATH: apt-get install postgresql"
        )
        if REQUIRED:
            pytest.fail(f"{reason} (CI=true: the PostgreSQL tests must run)", pytrace=False)
        pytest.skip(reason)
    cluster = start_cluster(bindir)
    try:
        yield cluster
    finally:
        cluster.stop()


def _own_database(cluster: Cluster, *, with_tables: bool) -> Iterator[str]:
    name = cluster.database(with_tables=with_tables)
    try:
        yield cluster.url(name)
    finally:
        forget_checked()
        cluster.drop(name)


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> Iterator[str]:
    """A database of its own for the test, holding ShopBot's (empty) tables, dropped after
    it."""
    yield from _own_database(postgres_cluster, with_tables=True)


@pytest.fixture
def empty_postgres_url(postgres_cluster: Cluster) -> Iterator[str]:
    """An empty database of its own for the test (ShopBot makes its tables), dropped after
    it."""
    yield from _own_database(postgres_cluster, with_tables=False)


@pytest.fixture
def postgres_database(postgres_url: str) -> PostgresDatabase:
    return PostgresDatabase(postgres_url)


def _backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        monkeypatch.setenv("SHOPBOT_DATABASE_URL", url)
        return Backend("postgres", tmp_path, url)
    monkeypatch.delenv("SHOPBOT_DATABASE_URL", raising=False)
    return Backend("sqlite", tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    """The test's store, on each backend in turn; SHOPBOT_DATABASE_URL is set to match, so
    an engine or a `shopbot` command started by the test uses it too."""
    return _backend(request, tmp_path, monkeypatch)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def heavy_backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    """`backend` for the many or long tests: their postgres runs are in `-m postgres`."""
    return _backend(request, tmp_path, monkeypatch)
