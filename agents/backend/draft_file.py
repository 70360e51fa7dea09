"""What an operator typed and did not send, kept on their own machine when ShopBot runs on a
server: a draft is one person's, and it must outlive a dropped connection.

One JSON file in the operator's home, one section per server; written whole to a temporary
file and renamed, so a crash leaves the old file or the new one, never half of either. A
key pasted into the box is redacted before it is kept, as in the home's own drafts.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from agents.safety.redaction import redact
from agents.store.sqlite import storable_text

# A new conversation's draft (its id is made when it is first written in).
_NEW = ""


class DraftFile:
    def __init__(self, path: Path, server: str) -> None:
        self.path = path
        self._server = server
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            # Drafts only: a damaged file is set aside, not a reason to refuse to start.
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _mine(self, everything: dict[str, Any]) -> dict[str, str]:
        section = everything.get(self._server)
        if not isinstance(section, dict):
            return {}
        return {str(k): v for k, v in section.items() if isinstance(v, str)}

    def draft(self, thread_id: str | None) -> str:
        with self._lock:
            return self._mine(self._read()).get(thread_id or _NEW, "")

    def drafted(self) -> set[str]:
        with self._lock:
            return {key for key in self._mine(self._read()) if key != _NEW}

    def save(self, thread_id: str | None, text: str) -> None:
        text = redact(storable_text(text))
        with self._lock:
            everything = self._read()
            mine = self._mine(everything)
            if text.strip():
                mine[thread_id or _NEW] = text
            elif mine.pop(thread_id or _NEW, None) is None:
                return
            everything[self._server] = mine
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            partial.write_text(json.dumps(everything, ensure_ascii=False), encoding="utf-8")
            partial.replace(self.path)
