"""The audit viewer's time filter: named periods that end now ("Last hour", "Today").

A period becomes the `since` of an `AuditQuery` when it is chosen (and again on refresh),
not on every query: "last hour" means the hour before the person asked, and the same filter
twice is the same query. Exact ranges are the command line's job (`shopbot audit --since`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from agents.backend import normalise_ts


@dataclass(frozen=True)
class Period:
    key: str
    label: str
    # How far back from now; None: since the start of today in the viewer's zone.
    span: timedelta | None


PERIODS: tuple[Period, ...] = (
    Period("15m", "Last 15 minutes", timedelta(minutes=15)),
    Period("1h", "Last hour", timedelta(hours=1)),
    Period("today", "Today", None),
    Period("24h", "Last 24 hours", timedelta(hours=24)),
    Period("7d", "Last 7 days", timedelta(days=7)),
    Period("30d", "Last 30 days", timedelta(days=30)),
)
_BY_KEY = {period.key: period for period in PERIODS}


def period_label(key: str) -> str:
    """What the person reads for `key` ("Last hour")."""
    return _by_key(key).label


def period_since(key: str, now: datetime, tz: tzinfo | None) -> str:
    """The first moment of period `key` ending at `now` (aware), as the audit log stores
    times; "today" starts at midnight in `tz` (None: the local zone, as the table shows)."""
    period = _by_key(key)
    if period.span is not None:
        return normalise_ts((now - period.span).isoformat())
    midnight = now.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
    if tz is None:
        # astimezone() gave today's offset as of now; midnight may have had another (a DST
        # change this morning): a naive local time is resolved by the C library, which knows.
        start = midnight.replace(tzinfo=None).astimezone()
    else:
        start = midnight.replace(tzinfo=tz)  # a zoneinfo zone finds midnight's own offset
    return normalise_ts(start.isoformat())


def _by_key(key: str) -> Period:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise ValueError(f"Unknown period {key!r}: one of {', '.join(_BY_KEY)}") from None
