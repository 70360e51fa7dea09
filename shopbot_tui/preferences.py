"""What a person chose in the app and expects to find again next time: the theme.

Kept in `preferences.json` in SHOPBOT_HOME, written whole to a temporary file and moved over
the old one, so a crash mid-write leaves the old choice, never half a file. A file that cannot
be read is left as it is (it may hold something a person wrote by hand) and not written over:
the app says so once and starts with its defaults.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shopbot_tui.chat.newest_wins import NewestWins

log = logging.getLogger("shopbot.tui")
FILE_NAME = "preferences.json"


@dataclass(frozen=True)
class Preferences:
    theme: str | None = None


class PreferencesUnreadable(ValueError):
    """The file exists and is not preferences: says which file and what to do."""


class PreferencesFile:
    """`preferences.json` under `home`: `load()` once, then `want()` and `flush()`."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE_NAME
        self._unsaved: NewestWins[str, Preferences] = NewestWins()
        # Set when the file could not be read: it is then never written over.
        self._keep_as_is = False

    def load(self) -> Preferences:
        """The saved preferences (defaults when there are none); `PreferencesUnreadable`
        when the file is there but cannot be used."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Preferences()
        except (OSError, UnicodeDecodeError) as exc:
            raise self._unreadable(exc) from exc
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise self._unreadable(f"not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise self._unreadable("not a JSON object")
        theme = data.get("theme")
        return Preferences(theme=theme if isinstance(theme, str) and theme.strip() else None)

    def _unreadable(self, reason: object) -> PreferencesUnreadable:
        self._keep_as_is = True
        return PreferencesUnreadable(
            f"Could not read the preferences in {self.path} ({reason}); starting with the "
            "default theme. The file is left as it is: fix or delete it to keep a theme again."
        )

    def want(self, preferences: Preferences) -> None:
        """Note the newest choice (on the event loop, in the order choices are made)."""
        self._unsaved.want(FILE_NAME, preferences)

    def flush(self) -> None:
        """Write the newest choice not yet written, if any (from a worker thread); see
        `NewestWins`. OSError when the file cannot be written."""
        self._unsaved.flush(self._write)

    def _write(self, _key: str, preferences: Preferences) -> None:
        if self._keep_as_is:
            return  # kept for a person to mend
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        try:
            partial.write_text(json.dumps(asdict(preferences), indent=2) + "\n", encoding="utf-8")
            partial.replace(self.path)
        finally:
            partial.unlink(missing_ok=True)
