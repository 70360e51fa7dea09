"""A local log file for diagnosing problems, with every secret redacted before it is written."""

from __future__ import annotations

import logging
from pathlib import Path

from agents.redaction import redact

LOG_FILE = "shopbot.log"


class RedactingFormatter(logging.Formatter):
    """Redacts the whole formatted record, traceback included: secrets hide in exceptions too."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging(home: Path, *, level: int = logging.INFO) -> Path:
    """Send ShopBot's and its libraries' warnings to `home/shopbot.log`; return the path."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / LOG_FILE
    handler = logging.FileHandler(path, encoding="utf-8")
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
