"""A throwaway PostgreSQL cluster for the tests marked `postgres`: initdb in a temporary
folder, the server on 127.0.0.1 at a free port, a database made per test, all of it stopped
and removed at the end of the run.

Debian keeps the server's programs in /usr/lib/postgresql/<version>/bin, off PATH. The server
refuses to run as root, so as root they run as the package's `postgres` user (`runuser`).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

# The role ShopBot connects as, over TCP with a password (scram-sha-256), as a server would
# have it. Long enough to be registered as a secret (agents/safety/redaction.py).
ROLE = "shopbot"
PASSWORD = "pg-test-password-4711"


def server_binaries() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb, else initdb on PATH."""
    found = sorted(
        (p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")),
        key=lambda bindir: int(bindir.parent.name) if bindir.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1]
    on_path = shutil.which("initdb")
    return Path(on_path).resolve().parent if on_path else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """A running throwaway cluster; `database()` makes an empty database for a test."""

    bindir: Path
    base: Path
    port: int
    _made: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _template_name: str | None = None

    @property
    def data(self) -> Path:
        return self.base / "data"

    def url(self, dbname: str, *, user: str = ROLE, password: str | None = PASSWORD) -> str:
        auth = user if password is None else f"{user}:{password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """A superuser connection over the cluster's own socket (trusted: no password)."""
        return psycopg.connect(
            host=str(self.base), port=self.port, user="postgres", dbname=dbname, autocommit=True
        )

    def database(self, *, owner: str = ROLE, with_tables: bool = False) -> str:
        """A new database owned by `owner`, empty or `with_tables` (ShopBot's, made once
        in a template and copied: a tenth of the time of making them each time); its name."""
        name = f"shopbot_test_{os.getpid()}_{next(self._made)}"
        create = sql.SQL("CREATE DATABASE {} OWNER {}").format(
            sql.Identifier(name), sql.Identifier(owner)
        )
        if with_tables:
            create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(self._template()))
        with self.admin() as conn:
            if conn.info.server_version >= 150000:
                # (Copying the files beats logging every page for a database this small.)
                create += sql.SQL(" STRATEGY FILE_COPY")
            conn.execute(create)
        return name

    def _template(self) -> str:
        if self._template_name is None:
            from agents.store.postgres.database import checked_postgres, forget_checked

            name = self.database()
            checked_postgres(self.url(name))  # (its connection is closed again: copyable)
            forget_checked()
            self._template_name = name
        return self._template_name

    def drop(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def role(self, name: str, password: str) -> None:
        """A login role with no privileges beyond PostgreSQL's defaults."""
        with self.admin() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(name), sql.Literal(password)
                )
            )

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            _run_as_server(
                [self.bindir / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"], check=False
            )
        shutil.rmtree(self.base, ignore_errors=True)


def _as_server_user(command: Sequence[object]) -> list[str]:
    # "root" execution of the PostgreSQL server is not permitted.
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return [*prefix, *map(str, command)]


def _run_as_server(command: Sequence[object], *, check: bool = True) -> None:
    # From /: the server's user may not be allowed into the caller's working folder.
    done = subprocess.run(
        _as_server_user(command), cwd="/", capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{done.stdout}{done.stderr}")


def start_cluster(bindir: Path, **settings: str) -> Cluster:
    """initdb + `pg_ctl -w start` in a new temporary folder; `settings` go to postgresql.conf."""
    # Not pytest's tmp_path: /tmp/pytest-of-root is 0700, closed to the server's user.
    base = Path(tempfile.mkdtemp(prefix="shopbot-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    cluster = Cluster(bindir=bindir, base=base, port=free_port())
    try:
        _run_as_server(
            [
                bindir / "initdb",
                "-D",
                cluster.data,
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
                "--no-instructions",
            ]
        )
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(cluster.port),
            "unix_socket_directories": f"'{base}'",
            # A throwaway cluster: durability buys nothing here, and the tests run faster.
            "fsync": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            **settings,
        }
        with (cluster.data / "postgresql.conf").open("a", encoding="utf-8") as out:
            out.writelines(f"{key} = {value}\n" for key, value in conf.items())
        _run_as_server(
            [
                bindir / "pg_ctl",
                "-D",
                cluster.data,
                "-l",
                base / "server.log",
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        with cluster.admin() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(ROLE), sql.Literal(PASSWORD)
                )
            )
    except BaseException:
        cluster.stop()
        raise
    return cluster
