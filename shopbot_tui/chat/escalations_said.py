"""The escalations this app has told about, kept across launches in SHOPBOT_HOME.

At start-up the app says which conversations are escalated and wait for a person: it said
the same ones again at every launch, until someone marked them handled. Those said once (at
a start-up, or as they happened) are kept here and not said again; one closed and escalated
anew is another escalation (its `since` differs), said again. Only the open ones are kept,
so the file stays as small as the queue.

Written whole to a temporary file and moved over the old one. A file that cannot be read
costs only a repeated notice: it is logged and written anew.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger("shopbot.tui")
FILE_NAME = "escalations-said.json"

# (thread id, since): one escalation, as the registry has it.
EscalationKey = tuple[str, str]


class EscalationsSaid:
    """`escalations-said.json` under `home`; `load` and `save` run off the event loop."""

    def __init__(self, home: Path) -> None:
        self.path = home / FILE_NAME

    def load(self) -> frozenset[EscalationKey]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return frozenset()
        except (OSError, ValueError) as exc:
            log.warning("could not read %s (%s); escalations may be said again", self.path, exc)
            return frozenset()
        if not isinstance(data, list):
            return frozenset()
        return frozenset(
            (item[0], item[1])
            for item in data
            if isinstance(item, list) and len(item) == 2 and all(isinstance(i, str) for i in item)
        )

    def save(self, said: frozenset[EscalationKey]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
            try:
                text = json.dumps(sorted([list(key) for key in said]), indent=1)
                partial.write_text(text + "\n", encoding="utf-8")
                partial.replace(self.path)
            finally:
                partial.unlink(missing_ok=True)
        except OSError as exc:  # (only a notice said again at the next start)
            log.warning("could not keep the escalations said in %s: %s", self.path, exc)
