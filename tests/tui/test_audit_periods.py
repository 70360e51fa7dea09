"""The audit viewer's named periods: where each starts, "Today" by the viewer's clock and zone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from shopbot_tui.audit.periods import PERIODS, period_label, period_since

NOW = datetime(2026, 3, 29, 10, 0, 30, tzinfo=UTC)  # noon in Berlin, the day clocks go forward


@pytest.mark.parametrize(
    ("key", "since"),
    [
        ("15m", "2026-03-29T09:45:30.000Z"),
        ("1h", "2026-03-29T09:00:30.000Z"),
        ("24h", "2026-03-28T10:00:30.000Z"),
        ("7d", "2026-03-22T10:00:30.000Z"),
        ("30d", "2026-02-27T10:00:30.000Z"),
    ],
)
def test_a_span_ends_now(key: str, since: str) -> None:
    assert period_since(key, NOW, UTC) == since


def test_today_starts_at_midnight_in_the_viewers_zone() -> None:
    assert period_since("today", NOW, UTC) == "2026-03-29T00:00:00.000Z"
    new_york = timezone(timedelta(hours=-4))  # 06:00 there: still the 29th
    assert period_since("today", NOW, new_york) == "2026-03-29T04:00:00.000Z"
    tokyo = timezone(timedelta(hours=9))  # 19:00 there
    assert period_since("today", NOW, tokyo) == "2026-03-28T15:00:00.000Z"


def test_today_starts_at_midnights_own_offset_on_a_clock_change_day() -> None:
    # Midnight in Berlin was still winter time (+01:00), noon is summer time (+02:00).
    assert period_since("today", NOW, ZoneInfo("Europe/Berlin")) == "2026-03-28T23:00:00.000Z"


@pytest.fixture
def berlin_local_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("berlin_local_time")
def test_today_in_the_local_zone_knows_the_clock_change_too() -> None:
    assert period_since("today", NOW, None) == "2026-03-28T23:00:00.000Z"


def test_every_period_has_a_label_and_an_unknown_one_is_named() -> None:
    assert period_label("1h") == "Last hour"
    assert len({period.label for period in PERIODS}) == len(PERIODS)
    with pytest.raises(ValueError, match="Unknown period 'week'"):
        period_since("week", NOW, UTC)
