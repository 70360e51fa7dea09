"""The audit-log viewer, driven the way a person uses it: keys, filters, paging, export.

A minimal host app pushes the screen (no engine, no main app). The audit data has fixed
timestamps and adversarial customer text: markup, a link and an ESC sequence.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Input, Label, LoadingIndicator, Select, Static

from agents.audit.log import AuditEvent, AuditLog, AuditQuery
from agents.backend.local import LocalBackend
from agents.settings import Settings
from agents.store.home import checked_home
from shopbot_tui.audit import screen as audit_viewer
from shopbot_tui.audit.detail import CLIPPED_NOTE, MAX_VALUE_CHARS
from shopbot_tui.audit.screen import PAGE_SIZE, AuditViewerScreen, _PageLoaded
from shopbot_tui.audit.table import AuditEventTable
from tests.support.damage import filled_audit_log, garble_past_first_page

MARKUP = "[bold]x[/] arrived broken"
LINK_AND_ESC = "[link=http://evil]y[/link] \x1b[31mred\x1b[0m angry"

# Oldest first: (kind, thread, agent, detail). Ids are 1..12 in this order.
EVENTS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("turn_started", "T-alex", "order_agent", {"message": "Where is my order ORD-001?"}),
    ("gate_passed", "T-alex", "order_agent", {"gate": "order_id", "order_id": "ORD-001"}),
    ("tool_called", "T-alex", "order_agent", {"tool": "lookup_order", "order_id": "ORD-001"}),
    ("handoff", "T-sam", "order_agent", {"to": "refund_agent", "reason": "refund request"}),
    (
        "gate_failed",
        "T-sam",
        "refund_agent",
        {"gate": "order_id", "order_id": "ORD-0O2", "error": "Order ids look like ORD-123"},
    ),
    ("correction", "T-sam", "refund_agent", {"attempt": 1, "of": 2}),
    (
        "approval_requested",
        "T-sam",
        "refund_agent",
        {"order_id": "ORD-002", "amount": 14.99, "reason": MARKUP},
    ),
    ("turn_started", "T-jordan", "complaints_agent", {"message": LINK_AND_ESC}),
    (
        "escalated",
        "T-jordan",
        "complaints_agent",
        {"summary": "Customer is angry about a late laptop stand", "sentiment": "angry"},
    ),
    ("provider_error", "T-alex", "order_agent", {"error": "HTTP 429 rate limited"}),
    ("approval_decided", "T-sam", "refund_agent", {"decision": "approve"}),
    ("refund_processed", "T-sam", "refund_agent", {"order_id": "ORD-002", "amount": 14.99}),
]
SAM_IDS = [12, 11, 7, 6, 5, 4]


def home_database(home: Path) -> Path:
    """The database of a ShopBot home made in `home` (the viewer reads the home's log)."""
    return checked_home(home)


def fixed_clock() -> Callable[[], datetime]:
    """2025-06-10 09:00:00 UTC, then 37 s later at each call."""
    start = datetime(2025, 6, 10, 9, 0, tzinfo=UTC)
    ticks = itertools.count()
    return lambda: start + timedelta(seconds=37 * next(ticks))


@pytest.fixture
def audit_path(tmp_path: Path) -> Iterator[Path]:
    path = home_database(tmp_path)
    with AuditLog(path, clock=fixed_clock()) as log:
        for kind, thread, agent, detail in EVENTS:
            log.append(kind, thread_id=thread, agent=agent, detail=detail)
    yield path


class ViewerHost(App[None]):
    """Pushes the audit viewer and records its ResultsShown messages."""

    def __init__(self, audit_path: Path, **viewer_options: Any) -> None:
        super().__init__()
        self.audit_path = audit_path
        self.viewer_options = viewer_options
        self.results: list[AuditViewerScreen.ResultsShown] = []
        self.results_changed = asyncio.Event()

    def on_mount(self) -> None:
        # The log is the home's database: the backend reads it as the app's does.
        self.backend = LocalBackend(Settings(home=self.audit_path.parent), via="app")
        options = {"export_dir": self.audit_path.parent / "exports", **self.viewer_options}
        self.push_screen(AuditViewerScreen(self.backend, tz=UTC, **options))

    async def on_unmount(self) -> None:
        await self.backend.close()

    def on_audit_viewer_screen_results_shown(self, message: AuditViewerScreen.ResultsShown) -> None:
        self.results.append(message)
        self.results_changed.set()


async def wait_until(pilot: Pilot[None], condition: Callable[[], bool]) -> None:
    """Wait (up to 10 s) for a timer-driven change, checking every frame."""
    for _ in range(600):
        if condition():
            return
        await pilot.pause(1 / 60)
    raise AssertionError("condition not met within 10 s")


def host(pilot: Pilot[None]) -> ViewerHost:
    assert isinstance(pilot.app, ViewerHost)
    return pilot.app


async def settle(pilot: Pilot[None]) -> None:
    """Let every worker finish and every message they posted be handled."""
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def opened(pilot: Pilot[None]) -> tuple[AuditViewerScreen, AuditEventTable]:
    screen = pilot.app.screen
    assert isinstance(screen, AuditViewerScreen)
    await asyncio.wait_for(screen.first_page_shown.wait(), timeout=10)
    await settle(pilot)
    return screen, screen.query_one(AuditEventTable)


def ids(table: AuditEventTable) -> list[int]:
    return [event.id for event in table.events]


def row_plain(table: AuditEventTable, row: int) -> list[str]:
    return [cell.plain for cell in table.cells(row)]


def screen_lines(table: AuditEventTable) -> list[str]:
    """The table as painted: header and visible rows, plain text."""
    return [table.render_line(y).text for y in range(table.size.height)]


async def detail_of(pilot: Pilot[None], screen: AuditViewerScreen, event_id: int) -> str:
    """The detail pane once it shows event `event_id` (the cursor's move is a message away)."""
    for _ in range(100):
        text = detail_text(screen)
        if text.startswith(f"id        {event_id}\n"):
            return text
        await pilot.pause()
    raise AssertionError(f"the detail pane never showed event {event_id}: {text[:80]!r}")


def detail_text(screen: AuditViewerScreen) -> str:
    parts = []
    for static_id in ("#audit-detail-fields", "#audit-detail-json"):
        content = screen.query_one(static_id, Static).content
        assert isinstance(content, Content)  # literal content, never a markup string
        parts.append(content.plain)
    return "\n".join(parts)


def count_label(screen: AuditViewerScreen) -> str:
    return str(screen.query_one("#audit-count", Label).content)


async def test_events_newest_first_with_all_columns(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        assert ids(table) == list(range(12, 0, -1))
        assert row_plain(table, 0) == [
            "2025-06-10 09:06:47",
            "T-sam",
            "refund_agent",
            "refund_processed",
            "order_id=ORD-002 amount=14.99",
        ]
        assert all(isinstance(cell, Text) for cell in table.cells(0))
        assert count_label(screen) == "12 events"
        assert screen.title == "Audit log"
        assert pilot.app.focused is table
        first = host(pilot).results[0]
        assert first.first and first.rows == 12


async def test_a_slow_first_page_shows_the_loading_indicator(
    audit_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    page = AuditLog.page

    def held_page(self: AuditLog, *args: Any, **kwargs: Any) -> list[AuditEvent]:
        release.wait(10)
        return page(self, *args, **kwargs)

    monkeypatch.setattr(AuditLog, "page", held_page)
    monkeypatch.setattr(audit_viewer, "LOADING_DELAY_S", 0.01)
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, AuditViewerScreen)
        results = screen.query_one("#audit-results")
        await wait_until(pilot, lambda: results.has_class("-loading"))
        assert screen.query_one(LoadingIndicator).display
        release.set()
        _, table = await opened(pilot)
        assert not results.has_class("-loading")
        assert len(table.events) == 12


async def test_alarm_kinds_stand_out_in_every_theme(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        _screen, table = await opened(pilot)
        alarm, quiet = ids(table).index(5), ids(table).index(6)  # gate_failed, correction

        def kind_style(row: int) -> Style:
            style = table.cells(row)[3].style
            assert isinstance(style, Style)
            return style

        assert kind_style(alarm).bold and not kind_style(quiet).bold
        dark_colour = kind_style(alarm).color
        pilot.app.theme = "textual-light"
        await pilot.pause()
        assert kind_style(alarm).bold
        assert kind_style(alarm).color != dark_colour  # re-coloured from the new theme


def not_a_database(path: Path) -> bytes:
    path.write_bytes(b"this is not a database" * 100)
    return path.read_bytes()


def damaged_past_its_first_page(path: Path) -> bytes:
    filled_audit_log(path)
    return garble_past_first_page(path)  # it opens; its pages fail when read


@pytest.mark.parametrize("damage", [not_a_database, damaged_past_its_first_page])
async def test_a_damaged_log_is_named_instead_of_crashing(
    tmp_path: Path, damage: Callable[[Path], bytes]
) -> None:
    path = home_database(tmp_path)
    damaged = damage(path)
    async with ViewerHost(path).run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, AuditViewerScreen)
        empty = screen.query_one("#audit-empty", Static)
        assert empty.display
        shown = str(empty.content)
        # (The log is the home's one database: named as the log, or as that database.)
        assert shown.startswith("The audit log can't be read: The ")
        assert f" at {path} " in shown
        assert "damaged" in shown and "mv '" in shown
        assert not screen.query_one("#audit-results").has_class("-loading")
        assert any(n.title == "Audit log unavailable" for n in pilot.app._notifications)
    assert path.read_bytes() == damaged


async def test_thread_filter_picked_with_keys(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        # Threads come most recently active first: T-sam (12), T-alex (10), T-jordan (9).
        await pilot.press("t", "down", "enter")
        await settle(pilot)
        assert screen.current_query == AuditQuery(thread_id="T-sam")
        assert ids(table) == SAM_IDS
        assert {row_plain(table, row)[1] for row in range(len(table.events))} == {"T-sam"}
        assert count_label(screen) == "6 events"


async def test_kind_filter_narrows_the_table(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        screen.query_one("#audit-kind", Select).value = "gate_failed"
        await settle(pilot)
        assert ids(table) == [5]
        assert row_plain(table, 0)[3] == "gate_failed"
        assert count_label(screen) == "1 event"


async def test_free_text_filter_on_enter_and_after_debounce(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        await pilot.press("slash")
        assert isinstance(screen.focused, Input)
        await pilot.press(*"laptop", "enter")
        await settle(pilot)
        assert ids(table) == [9]
        assert "late laptop stand" in row_plain(table, 0)[4]
        assert pilot.app.focused is table  # enter hands the results to the keyboard

        # Typing alone applies the filter once the person pauses (the debounce timer).
        host(pilot).results_changed.clear()
        await pilot.press("slash", "home", "ctrl+k", *"ORD-002")
        await asyncio.wait_for(host(pilot).results_changed.wait(), timeout=10)
        await settle(pilot)
        assert screen.current_query.text == "ORD-002"
        assert ids(table) == [12, 7]


async def test_text_typed_as_the_table_shows_a_detail_finds_it(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        await pilot.press("slash", *"order_id=ORD-002", "enter")
        await settle(pilot)
        assert ids(table) == [12, 7]
        assert all("order_id=ORD-002" in row_plain(table, row)[4] for row in (0, 1))
        # The form the detail pane and older habits use finds the same events.
        screen.set_filters(text="order_id: ORD-002")
        await settle(pilot)
        assert ids(table) == [12, 7]


async def test_several_pairs_typed_as_the_table_shows_them_find_events_with_all(
    audit_path: Path,
) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        await pilot.press("slash", *"order_id=ORD-002 amount=14.99", "enter")
        await settle(pilot)
        assert ids(table) == [12, 7]
        for row in (0, 1):
            assert {"order_id=ORD-002", "amount=14.99"} <= set(row_plain(table, row)[4].split())
        assert count_label(screen) == "2 events"
        screen.set_filters(text='gate=order_id "ORD-0O2" refund_agent')
        await settle(pilot)
        assert ids(table) == [5]


async def test_search_syntax_typed_by_a_person_is_text_never_an_error(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        # FTS5 quotes, operators and brackets: no row here shows any of these texts.
        for text in ['"', 'NEAR(order_id "ORD', "ORD-00* -ORD", "(", "ORD-001 AND"]:
            screen.set_filters(text=text)
            await settle(pilot)
            assert table.events == [], text
            assert count_label(screen) == "0 events", text
            empty = screen.query_one("#audit-empty", Static)
            assert str(empty.content) == "No events match these filters", text
        assert not any(n.severity == "error" for n in pilot.app._notifications)
        screen.set_filters(text="ORD-001 order_agent")  # after all that, a search works
        await settle(pilot)
        assert ids(table) == [3, 2, 1]


async def test_a_search_with_too_many_words_says_so(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        screen.set_filters(text=" ".join(f"w{n}" for n in range(150)))
        await settle(pilot)
        assert table.events == []
        empty = str(screen.query_one("#audit-empty", Static).content)
        assert empty.startswith("The search has 150 words; at most 100 are searched together.")
        notes = list(pilot.app._notifications)
        assert [(n.title, n.severity) for n in notes] == [("Search", "warning")]
        screen.set_filters(text="ORD-001")
        await settle(pilot)
        assert ids(table) == [3, 2, 1]


async def test_filters_combine_and_empty_state_is_clear(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        screen.set_filters(thread_id="T-alex", kind="provider_error")
        await settle(pilot)
        assert ids(table) == [10]
        screen.set_filters(thread_id="T-alex", text="refund")
        await settle(pilot)
        assert table.events == []
        assert screen.query_one("#audit-results").has_class("-empty")
        empty = screen.query_one("#audit-empty", Static)
        assert empty.display and str(empty.content) == "No events match these filters"
        assert count_label(screen) == "0 events"


async def test_markup_and_escapes_are_shown_literally(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(140, 32)) as pilot:
        screen, table = await opened(pilot)
        markup_row, link_row = ids(table).index(7), ids(table).index(8)
        assert MARKUP in row_plain(table, markup_row)[4]
        link_cell = row_plain(table, link_row)[4]
        assert "[link=http://evil]y[/link]" in link_cell
        assert "\x1b" not in link_cell
        painted = "\n".join(screen_lines(table))
        assert "[bold]x[/] arrived broken" in painted
        assert "[link=http://evil]y[/link]" in painted
        assert "\x1b" not in painted

        table.move_to_event(7)
        assert f'"reason": "{MARKUP}"' in await detail_of(pilot, screen, 7)
        table.move_to_event(8)
        shown = await detail_of(pilot, screen, 8)
        assert '"message": "[link=http://evil]y[/link] \\u001b[31mred\\u001b[0m angry"' in shown
        assert "\x1b" not in shown


async def test_a_100_kb_paste_is_cut_for_display_but_exported_whole(tmp_path: Path) -> None:
    path = home_database(tmp_path)
    paste = "Привет 你好 [b]x[/b] " * 5_000  # ~95 KB of Cyrillic, CJK and markup
    with AuditLog(path) as log:
        log.append("turn_started", thread_id="T-big", agent="order_agent", detail={"m": paste})
    export_dir = tmp_path / "out"
    async with ViewerHost(path, export_dir=export_dir).run_test(size=(100, 30)) as pilot:
        screen, table = await opened(pilot)
        assert row_plain(table, 0)[4].startswith("m=Привет 你好 [b]x[/b]")
        shown = detail_text(screen)
        assert CLIPPED_NOTE in shown
        assert len(shown) < 2 * MAX_VALUE_CHARS
        await pilot.press("x")
        await settle(pilot)
        assert screen.last_export is not None
        exported = json.loads(screen.last_export.read_text(encoding="utf-8"))
        assert exported["detail"]["m"] == paste


async def test_detail_pane_follows_the_cursor_and_enter_focuses_it(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        await pilot.press("down", "down")
        shown = detail_text(screen)
        event = table.events[2]
        assert event.id == 10
        for field in (str(event.id), event.ts, "T-alex", "order_agent", "provider_error"):
            assert field in shown
        assert json.loads(shown.split("\n", 5)[5]) == event.detail == EVENTS[9][3]

        await pilot.press("enter")
        assert pilot.app.focused is not None and pilot.app.focused.id == "audit-detail-body"
        await pilot.press("escape")
        assert pilot.app.focused is table

        # A click highlights a row (line 0 is the header); a second click opens it.
        await pilot.click(AuditEventTable, offset=(3, 4))
        await pilot.pause()
        assert table.highlighted_event is not None and table.highlighted_event.id == 9
        await pilot.click(AuditEventTable, offset=(3, 4))
        await pilot.pause()
        assert pilot.app.focused is not None and pilot.app.focused.id == "audit-detail-body"
        assert '"sentiment": "angry"' in detail_text(screen)

        await pilot.press("escape", "escape")
        assert not isinstance(pilot.app.screen, AuditViewerScreen)


async def test_preset_thread_and_q_closes(audit_path: Path) -> None:
    async with ViewerHost(audit_path, thread_id="T-jordan").run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        assert ids(table) == [9, 8]
        assert screen.query_one("#audit-thread", Select).value == "T-jordan"
        await pilot.press("q")
        assert not isinstance(pilot.app.screen, AuditViewerScreen)


async def test_paging_loads_more_rows_near_the_end(tmp_path: Path) -> None:
    path = home_database(tmp_path)
    with AuditLog(path) as log:
        log.append_many(
            {"kind": "tool_called", "thread_id": f"T-{n % 7}", "detail": {"n": n}}
            for n in range(1_500)
        )
    async with ViewerHost(path).run_test(size=(100, 30)) as pilot:
        screen, table = await opened(pilot)
        assert len(table.events) == PAGE_SIZE  # one page, not the whole log
        assert count_label(screen) == "1,500 events"
        for _ in range(20):
            if len(table.events) == 1_500:
                break
            await pilot.press("end")
            await settle(pilot)
        loaded = ids(table)
        assert len(loaded) == 1_500
        assert all(a > b for a, b in itertools.pairwise(loaded))  # strictly descending
        assert loaded == list(range(1_500, 0, -1))  # so no duplicates and no gaps

        # The mouse wheel pages too, not only the cursor.
        screen.set_filters(thread_id="T-3")
        await settle(pilot)
        assert len(table.events) == PAGE_SIZE
        table.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        assert ids(table) == [n + 1 for n in range(1_499, -1, -1) if n % 7 == 3]


async def test_export_writes_exactly_the_filtered_events(audit_path: Path, tmp_path: Path) -> None:
    export_dir = tmp_path / "out"
    async with ViewerHost(audit_path, export_dir=export_dir).run_test(size=(120, 32)) as pilot:
        screen, _table = await opened(pilot)
        screen.set_filters(thread_id="T-sam")
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert screen.last_export is not None
        assert screen.last_export.parent == export_dir
        assert screen.last_export.name.startswith("audit-")
        assert screen.last_export.suffix == ".jsonl"
        lines = screen.last_export.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        assert [record["id"] for record in records] == SAM_IDS
        assert all(
            set(record) == {"id", "ts", "thread_id", "agent", "kind", "detail"}
            for record in records
        )
        assert records[2]["detail"]["reason"] == MARKUP

        await pilot.press("x")  # same second: a second file, never an overwrite
        await settle(pilot)
        assert len(list(export_dir.glob("audit-*.jsonl"))) == 2


async def test_export_default_folder_is_beside_the_audit_file(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, _table = await opened(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert screen.last_export is not None
        assert screen.last_export.parent == audit_path.parent / "exports"
        assert len(screen.last_export.read_text(encoding="utf-8").splitlines()) == 12


async def test_refresh_shows_new_events_and_keeps_the_cursor(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        await pilot.press("down", "down")
        assert table.highlighted_event is not None and table.highlighted_event.id == 10
        with AuditLog(audit_path) as log:
            log.append("limit_reached", thread_id="T-new", detail={"handoffs": 4})
        await pilot.press("r")
        await settle(pilot)
        assert ids(table)[:2] == [13, 12]
        assert table.highlighted_event is not None and table.highlighted_event.id == 10
        assert count_label(screen) == "13 events"
        options = screen.query_one("#audit-thread", Select)._options
        assert "T-new" in [value for _, value in options]


async def test_a_stale_result_is_ignored(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        with AuditLog(audit_path) as log:
            stale = log.page(AuditQuery(thread_id="T-alex"))
        screen.set_filters(kind="escalated")
        screen.post_message(_PageLoaded(0, stale, first=True))  # an older generation
        await settle(pilot)
        assert ids(table) == [9]


def test_snapshot_of_the_viewer(audit_path: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await opened(pilot)
        await pilot.press("down", "down", "down", "down", "down")  # the [bold] reason
        await settle(pilot)

    assert snap_compare(ViewerHost(audit_path), terminal_size=(120, 34), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (70, 20), (60, 20)])
async def test_every_filter_shows_in_a_small_terminal(
    audit_path: Path, size: tuple[int, int]
) -> None:
    long_thread = "20261130-114305-2b692c"  # as the app names threads
    async with ViewerHost(audit_path, thread_id=long_thread).run_test(size=size) as pilot:
        screen, _table = await opened(pilot)
        width = size[0]
        bar = screen.query_one("#audit-filters")
        for selector in ("#audit-thread", "#audit-kind", "#audit-when", "#audit-search"):
            region = screen.query_one(selector).region
            assert region.width >= 16 and region.right <= width, (selector, region)
        if width >= 78:
            # One row of inputs (a wrapped thread id made it four rows tall).
            assert bar.region.height == 3
        else:
            # Two a row without borders: two lines, less than one row of bordered ones.
            assert bar.region.height == 2
            assert screen.query_one("#audit-when").region.y == bar.region.y + 1
        if width >= 80:  # every key of the viewer is in the footer (the palette has them all)
            assert "o Open" in painted(pilot, "Footer")
        # The count is shown: in the bar when it has room, else in the header.
        assert "0 events" in count_label(screen)
        if width < 90:
            assert screen.sub_title == "0 events"
            assert not screen.query_one("#audit-count").display
        # Wider again: the count is back in the bar and the header is the title alone.
        await pilot.resize_terminal(120, 32)
        await pilot.pause()
        assert screen.sub_title == ""
        assert screen.query_one("#audit-count").region.width > 0


def painted(pilot: Pilot[None], selector: str) -> str:
    """What the terminal shows where `selector` is, as a person reads it."""
    region = pilot.app.screen.query_one(selector).region
    strips = pilot.app.screen._compositor.render_strips()[region.y : region.bottom]
    return "\n".join(strip.crop(region.x, region.right).text for strip in strips)


async def test_a_cut_thread_id_keeps_its_end_in_the_filter_as_in_the_table(
    audit_path: Path,
) -> None:
    """The filter cut '20261130-114305-2b692c' to its date ('20261130-11…'), which every
    thread of the day shares, while the table showed its end ('…-2b692c')."""
    threads = ["20261130-114305-2b692c", "20261130-114307-77aa01"]
    with AuditLog(audit_path) as log:
        for thread in threads:
            log.append("turn_started", thread_id=thread, agent="order_agent", detail={})
    async with ViewerHost(audit_path, thread_id=threads[0]).run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        shown = painted(pilot, "#audit-thread")
        assert "2b692c" in shown and "…" in shown, shown
        assert "20261130-11" not in shown, shown
        assert "2b692c" in painted(pilot, "#audit-table")
        # The list to choose from tells the threads apart the same way.
        await pilot.press("t")
        await pilot.pause()
        listed = painted(pilot, "#audit-thread SelectOverlay")
        assert "2b692c" in listed and "77aa01" in listed, listed


@pytest.mark.parametrize(
    ("size", "short"),
    [((70, 20), True), ((80, 24), True), ((90, 24), True), ((120, 32), False)],
    ids=["70x20", "80x24", "90x24", "120x32"],
)
async def test_every_agent_reads_whole_at_any_width(
    audit_path: Path, size: tuple[int, int], short: bool
) -> None:
    """At 80 columns the Agent column was 8 wide: "refund_…", "complai…". Narrow, every agent
    goes by its short name, whole, and times by the minute; the detail pane has it all."""
    async with ViewerHost(audit_path).run_test(size=size) as pilot:
        screen, table = await opened(pilot)
        lines = painted(pilot, "#audit-table").splitlines()
        header = lines[0]
        columns = {name: header.index(name) for name in ("Time", "Agent", "Kind")}
        rows = [line for line in lines[1:] if line.strip()][: len(table.events)]
        assert len(rows) >= 8, lines  # refund, order and complaints agents among them
        shown = [row[columns["Agent"] : columns["Kind"]].strip() for row in rows]
        agents = [event.agent or "—" for event in table.events[: len(rows)]]
        if short:
            assert shown == [agent.removesuffix("_agent") for agent in agents], shown
            assert {"order", "refund", "complaints"} <= set(shown)
            assert rows[0][: columns["Time"] + 17].split() == ["2025-06-10", "09:06"], rows[0]
        else:
            assert shown == agents, shown
            assert rows[0].split()[:2] == ["2025-06-10", "09:06:47"], rows[0]
        assert header.startswith(" Time (UTC)"), header  # the zone the times are in
        for row in rows:
            assert "…" not in row[: columns["Kind"]], row  # time, thread and agent whole
        text = await detail_of(pilot, screen, 12)
        assert "refund_agent" in text and "2025-06-10T09:06:47" in text, text


class MovableClock:
    """What "now" is for the viewer's time filter; tests move it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


SHIFT_END = datetime(2025, 6, 10, 12, 0, tzinfo=UTC)
# (how long before SHIFT_END, thread); ids 1..6 in this order.
AGES = [
    (timedelta(days=40), "T-old"),
    (timedelta(days=8), "T-old"),
    (timedelta(days=2), "T-week"),
    (timedelta(hours=3), "T-today"),
    (timedelta(minutes=30), "T-now"),
    (timedelta(minutes=5), "T-now"),
]


@pytest.fixture
def aged_log(tmp_path: Path) -> Path:
    path = home_database(tmp_path)
    with AuditLog(path) as log:
        for age, thread in AGES:
            when = (SHIFT_END - age).isoformat()
            log.append_many([{"kind": "turn_started", "thread_id": thread, "ts": when}])
    return path


async def pick_period(pilot: Pilot[None], label: str) -> None:
    """Open the time filter with its key and choose `label` with the arrows, as a person does."""
    await pilot.press("w")
    await pilot.pause()
    select = pilot.app.screen.query_one("#audit-when", Select)
    assert select.expanded
    labels = [str(prompt) or "Any time" for prompt, _value in select._options]
    values = [value for _prompt, value in select._options]
    moves = labels.index(label) - values.index(select.value)
    await pilot.press(*["down" if moves > 0 else "up"] * abs(moves), "enter")
    await settle(pilot)


async def test_the_time_filter_shows_what_happened_in_a_period(aged_log: Path) -> None:
    clock = MovableClock(SHIFT_END)
    async with ViewerHost(aged_log, clock=clock).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        assert ids(table) == [6, 5, 4, 3, 2, 1]
        await pick_period(pilot, "Last hour")
        assert ids(table) == [6, 5]
        assert count_label(screen) == "2 events"
        assert screen.current_query.since == "2025-06-10T11:00:00.000Z"
        await pick_period(pilot, "Today")  # since midnight in the viewer's zone (UTC here)
        assert ids(table) == [6, 5, 4]
        await pick_period(pilot, "Last 7 days")
        assert ids(table) == [6, 5, 4, 3]
        await pick_period(pilot, "Last 15 minutes")
        assert ids(table) == [6]
        await pick_period(pilot, "Any time")
        assert ids(table) == [6, 5, 4, 3, 2, 1]
        assert screen.current_query == AuditQuery()


async def test_the_time_filter_combines_with_the_others_and_exports_what_it_shows(
    aged_log: Path, tmp_path: Path
) -> None:
    clock = MovableClock(SHIFT_END)
    export_dir = tmp_path / "out"
    host_app = ViewerHost(aged_log, clock=clock, export_dir=export_dir)
    async with host_app.run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        screen.set_filters(thread_id="T-old", period="30d")
        await settle(pilot)
        assert ids(table) == [2]
        assert screen.query_one("#audit-when", Select).value == "30d"
        screen.set_filters(period="24h", text="T-now")
        await settle(pilot)
        assert ids(table) == [6, 5]
        await pilot.press("x")
        await settle(pilot)
        assert screen.last_export is not None
        exported = [json.loads(line) for line in screen.last_export.read_text().splitlines()]
        assert [record["id"] for record in exported] == [6, 5]


async def test_refresh_lets_the_period_end_now(aged_log: Path) -> None:
    """ "Last hour" is the hour before the person looks, not before they chose it."""
    clock = MovableClock(SHIFT_END)
    async with ViewerHost(aged_log, clock=clock).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        await pick_period(pilot, "Last hour")
        assert ids(table) == [6, 5]
        clock.now = SHIFT_END + timedelta(minutes=40)
        with AuditLog(aged_log) as log:  # a new event meanwhile
            new = {"kind": "escalated", "thread_id": "T-new", "ts": clock.now.isoformat()}
            log.append_many([new])
        await pilot.press("r")
        await settle(pilot)
        assert ids(table) == [7, 6]  # 5 is 70 minutes old now
        assert screen.query_one("#audit-when", Select).value == "1h"


async def test_open_with_no_event_listed_says_so(audit_path: Path) -> None:
    async with ViewerHost(audit_path).run_test(size=(120, 32), notifications=True) as pilot:
        screen, table = await opened(pilot)
        screen.set_filters(text="zzz-not-there")
        await settle(pilot)
        assert ids(table) == []
        await pilot.press("o")
        await pilot.pause()
        assert pilot.app.screen is screen
        said = [notice.message for notice in pilot.app._notifications]
        assert said == ["No event is listed: nothing to open."]


async def test_enter_after_choosing_from_a_filter_opens_the_event_not_the_list_again(
    audit_path: Path,
) -> None:
    """After a kind was chosen from its list, the next enter opened that list again."""
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        kinds = screen.query_one("#audit-kind", Select)
        await pilot.press("k", "down", "enter")
        await settle(pilot)
        assert kinds.value == "approval_decided" and not kinds.expanded
        assert pilot.app.focused is table
        await pilot.press("enter")
        await pilot.pause()
        assert not kinds.expanded
        assert screen.query_one("#audit-results").has_class("-reading")


async def test_a_filter_list_closed_with_esc_gives_the_keys_back_to_the_results(
    audit_path: Path,
) -> None:
    """Closed with esc, the list's keys stayed on the filter: ↓ opened it again, and the
    footer offered only "Dismiss menu"."""
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        for key, select_id in (("t", "audit-thread"), ("k", "audit-kind"), ("w", "audit-when")):
            select = screen.query_one(f"#{select_id}", Select)
            await pilot.press(key)
            await settle(pilot)
            assert select.expanded
            await pilot.press("escape")
            await settle(pilot)
            assert not select.expanded and pilot.app.focused is table, key
            assert pilot.app.screen is screen  # esc closed the list, not the viewer
            row = table.cursor_row
            await pilot.press("down")
            await settle(pilot)
            assert not select.expanded and table.cursor_row == row + 1, key
            await pilot.press("up")
        # Reached with tab, a filter keeps the keys when its list closes: the person is there.
        kinds = screen.query_one("#audit-kind", Select)
        kinds.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert kinds.expanded
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.focused is kinds


async def test_enter_opens_the_event_large_and_esc_gives_the_table_its_room_back(
    audit_path: Path,
) -> None:
    """Enter only moved the focus into the pane below: nothing on screen changed."""
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, table = await opened(pilot)
        detail = screen.query_one("#audit-detail")
        before = detail.region
        await pilot.press("enter")
        await pilot.pause()
        assert detail.region.height > before.height + 5, (before, detail.region)
        assert table.region.height < 10
        assert "esc back to the list" in painted(pilot, "#audit-detail")
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.focused is table and detail.region == before
        assert "esc back" not in painted(pilot, "#audit-detail")


async def test_letters_typed_in_the_search_box_are_text_and_not_offered_as_keys(
    audit_path: Path,
) -> None:
    """In the search box a letter is text: Textual's Input consumes printable keys
    (`check_consume_key`), and the footer leaves out the keys it consumes."""
    async with ViewerHost(audit_path).run_test(size=(120, 32)) as pilot:
        screen, _table = await opened(pilot)
        assert "w When" in painted(pilot, "Footer")
        await pilot.press("slash")
        await pilot.pause()
        footer = painted(pilot, "Footer")
        for key in ("t Thread", "k Kind", "w When", "x Export", "o Open"):
            assert key not in footer, footer
        assert "esc Back" in footer
        await pilot.press(*"wow")
        await pilot.pause()
        assert screen.query_one("#audit-search", Input).value == "wow"
        assert not screen.query_one("#audit-when", Select).expanded
        await pilot.press("escape")
        await pilot.pause()
        assert "w When" in painted(pilot, "Footer")


async def test_whole_thread_ids_when_there_is_room(tmp_path: Path) -> None:
    """The table cut "20261130-114305-2b692c" to "…-114305-2b692c" at any width."""
    threads = ["20261130-114305-2b692c", "20261130-114307-77aa01"]
    path = home_database(tmp_path)
    with AuditLog(path) as log:
        for thread in threads:
            log.append("turn_started", thread_id=thread, agent="order_agent", detail={})
    async with ViewerHost(path, thread_id=threads[0]).run_test(size=(120, 32)) as pilot:
        await opened(pilot)
        assert threads[0] in painted(pilot, "#audit-table")
        assert threads[0] in painted(pilot, "#audit-thread")
        await pilot.press("t")
        await pilot.pause()
        listed = painted(pilot, "#audit-thread SelectOverlay")
        assert all(thread in listed for thread in threads), listed
