"""Names for new conversations in a home (a server names its own: remote.py)."""

from __future__ import annotations

import secrets
from datetime import datetime


def new_thread_id(now: datetime | None = None) -> str:
    """'20250601-142233-a1f3c9': sorts by creation, readable, and unique enough per person."""
    moment = now or datetime.now().astimezone()
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
