"""A local log file for diagnosing problems, with every secret redacted before it is written."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from agents.safety.redaction import redact
from agents.store.sqlite import StorageError

LOG_FILE = "shopbot.log"


class RedactingFormatter(logging.Formatter):
    """Redacts the whole formatted record, traceback included: secrets hide in exceptions too."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class QuietFileHandler(logging.FileHandler):
    """The log file, which stays quiet when it cannot be written (a full disk): logging's
    default prints a traceback to stderr for every record, over the one line a person
    should read. The log is for diagnosis; what went wrong is said where it happened."""

    def handleError(self, record: logging.LogRecord) -> None:
        # Only the file failing; a record that cannot be formatted is our bug: say it.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)


def configure_logging(home: Path, *, level: int = logging.INFO) -> Path:
    """Send ShopBot's and its libraries' warnings to `home/shopbot.log`; return the path.

    The first write into `home` of every run: a folder ShopBot cannot use is a StorageError
    naming it, before anything else is opened.
    """
    path = home / LOG_FILE
    try:
        home.mkdir(parents=True, exist_ok=True)
        handler = QuietFileHandler(path, encoding="utf-8")
    except OSError as exc:
        raise StorageError(_unusable_home(home, exc)) from exc
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "shopbot", False)]:
        root.removeHandler(old)
        old.close()
    handler.shopbot = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("shopbot").setLevel(level)
    return path


def _unusable_home(home: Path, exc: OSError) -> str:
    if home.exists() and not home.is_dir():
        problem = "it is a file, not a folder"
    else:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(home) else ""
        problem = f"{exc.strerror or exc}{where}"
    return (
        f"Cannot use the ShopBot folder {home}: {problem}. Make it a folder you can write to, "
        "or set SHOPBOT_HOME to one."
    )
