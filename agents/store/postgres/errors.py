"""PostgreSQL failures a person can act on, as one line naming the database (never its
password): the server unreachable, a wrong password, no such database, missing privileges,
a connection lost.

libpq's connection failures all arrive as `psycopg.OperationalError` with no SQLSTATE, so
they are told apart by their text; failures of a session have their SQLSTATE.
"""

from __future__ import annotations

import psycopg

from agents.safety.redaction import redact
from agents.store.sqlite import StorageError

WHAT = "ShopBot database"
_ACTION = "Correct SHOPBOT_DATABASE_URL, or unset it to keep the data in SHOPBOT_HOME."
# SQLSTATE classes (and codes) that are the database's condition, not a bug of ours.
_CONNECTION = "08"  # connection exception
_RESOURCES = "53"  # insufficient resources: disk full, out of memory, too many connections
_OPERATOR = "57"  # operator intervention: shut down, terminated, cancelled
_PRIVILEGE = "42501"
_READ_ONLY = "25006"
_NO_DATABASE = "3D000"
_AUTHORIZATION = "28"


def first_line(exc: BaseException) -> str:
    """The error's own words, one line, with any known secret taken out."""
    text = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
    # libpq says "connection to server at "h", port p failed: FATAL:  ...": the cause is last.
    cause = text.rpartition(" failed: ")[2] if "connection to server" in text else text
    return redact(cause.removeprefix("FATAL:").strip())


def connect_failure(
    shown: str, host: str, port: int, user: str, dbname: str, exc: Exception
) -> str:
    """Why the database at `shown` could not be connected to, as a person can act on it."""
    text = str(exc)
    where = f"the {WHAT} {shown}"
    if "Connection refused" in text or "No such file or directory" in text:
        cause = f"nothing answers at {host}:{port} (is PostgreSQL running there?)"
    elif "password authentication failed" in text:
        cause = f"it refused user {user!r}: a wrong password, or no such role"
    elif "no password supplied" in text:
        cause = f"it asks user {user!r} for a password and the address gives none"
    elif f'database "{dbname}" does not exist' in text:
        return (
            f"There is no database {dbname!r} at {host}:{port} ({shown}); nothing was created "
            f"or changed. Create it (createdb -O {user} {dbname}), or correct "
            "SHOPBOT_DATABASE_URL."
        )
    elif "permission denied for database" in text:
        cause = f"user {user!r} may not connect to database {dbname!r} (GRANT CONNECT)"
    elif "no pg_hba.conf entry" in text:
        cause = f"its pg_hba.conf does not let user {user!r} in from this machine"
    elif "failed to resolve host" in text or "could not translate host name" in text:
        cause = f"the host {host!r} cannot be found"
    elif "timeout expired" in text:
        cause = f"{host}:{port} did not answer in time"
    else:
        cause = first_line(exc)
    return f"Cannot connect to {where}: {cause}. Nothing was changed. {_ACTION}"


def session_failure(shown: str, user: str, exc: BaseException) -> StorageError | None:
    """A failure of a query that is the database's condition (lost, read-only, full, a
    privilege missing) as a `StorageError` naming it; None for anything else (our bug, a
    constraint doing its job), which stays as it is."""
    if not isinstance(exc, psycopg.Error):
        return None
    state = exc.sqlstate or ""
    said = first_line(exc)
    if state == _PRIVILEGE:
        return StorageError(
            f"PostgreSQL user {user!r} may not use ShopBot's tables in {shown} ({said}). "
            "Nothing was changed. Grant it what docs/postgres.md lists, or let the "
            "database's owner start ShopBot once to create them."
        )
    if state == _READ_ONLY:
        return StorageError(
            f"The {WHAT} {shown} takes no writes ({said}): a standby, or a read-only "
            f"transaction setting. Nothing was changed. {_ACTION}"
        )
    if state.startswith(_RESOURCES):
        return StorageError(
            f"The {WHAT} {shown} cannot take more ({said}). Nothing was changed. Free some "
            "room on its server and try again."
        )
    if state == _NO_DATABASE or state.startswith(_AUTHORIZATION):
        return StorageError(f"Cannot use the {WHAT} {shown} ({said}). Nothing was changed.")
    if state.startswith((_CONNECTION, _OPERATOR)) or (
        isinstance(exc, psycopg.OperationalError) and not state
    ):
        return StorageError(
            f"Lost the connection to the {WHAT} {shown} ({said}). What was being written "
            "then may not have been saved. Try again once PostgreSQL is back."
        )
    return None
