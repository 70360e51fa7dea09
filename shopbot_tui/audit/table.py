"""The audit viewer's event table: one line per event, newest first, pages appended at the end.

Not Textual's `DataTable`: it renders every visible cell through Rich on each repaint and
measures every cell of every added row. Measured here (textual 8.2.8, 2 cores): ~2 ms per
visible line and ~0.3 ms per added row, so a filter on a 40-line terminal took 150-200 ms
against the viewer's 100 ms budget. Audit rows are one line with fixed columns, so this
Line-API table builds a row's cells only when the row scrolls into view and caches its strip.

Cells are `rich.text.Text` built from literal strings, never markup: audit details hold
customer text such as `[bold]` or `[link=...]`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, tzinfo
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agents.backend import AuditEvent, visible

# Kinds that mean something went wrong or a person must look: bold, in the error colour.
ALARM_KINDS = frozenset({"gate_failed", "escalated", "provider_error", "limit_reached"})
# Every other kind gets a quiet tone (a theme variable) so the alarms stand out.
_KIND_TONES: Mapping[str, str] = {
    "correction": "text-warning",
    "tool_failed": "text-warning",
    "tool_refused": "text-warning",
    "approval_requested": "text-accent",
    "approval_withdrawn": "text-warning",
    "approval_decided": "text-success",
    "gate_passed": "text-success",
    "refund_processed": "text-success",
    "handoff": "text-primary",
    "tool_called": "text-secondary",
}
_FALLBACK_COLOURS = {
    "text-error": "#D17E92",
    "text-warning": "#FFC473",
    "text-accent": "#FFC473",
    "text-success": "#8AD4A1",
    "text-primary": "#57A5E2",
    "text-secondary": "#5684A5",
}

COLUMNS = ("Time", "Thread", "Agent", "Kind", "Detail")
_TIME_COLUMN = COLUMNS.index("Time")
_THREAD_COLUMN = COLUMNS.index("Thread")
_AGENT_COLUMN = COLUMNS.index("Agent")
# Time, thread, agent and kind widths; the detail column takes the rest. The thread column
# grows to the longest thread id loaded, up to its maximum: the app's ids are 22 long, and
# cut to their end ("…-2b692c") they named no conversation a person could find.
_FIXED_WIDTHS = (19, 16, 16, 18)
_MAX_THREAD_WIDTH = 26
_MIN_DETAIL_WIDTH = 24
_MIN_SQUEEZED_WIDTH = 8
# Narrow, agents go by their short names ("complaints" is the longest) and times lose their
# seconds ("2025-06-10 09:06"): at 80 columns "refund_agent" and "complaints_agent" were both
# cut to 8 ("refund_…", "complai…"). The detail pane below has the full values.
_SHORT_AGENT_WIDTH = 10
_SHORT_TIME_WIDTH = 16
_TIME_WITH_SECONDS = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
# One space before each cell: a log reads well tight, and narrow terminals need the room.
_GAP = 1
SUMMARY_CHARS = 240


def kind_styles(theme_variables: Mapping[str, str]) -> dict[str, Style]:
    """Rich styles for each kind, from the app theme's CSS variables (`App.theme_variables`)."""

    def colour(name: str) -> str:
        value = theme_variables.get(name, "")
        return value if value.startswith("#") else _FALLBACK_COLOURS[name]

    styles = {kind: Style.parse(colour(tone)) for kind, tone in _KIND_TONES.items()}
    styles.update({kind: Style.parse(f"bold {colour('text-error')}") for kind in ALARM_KINDS})
    return styles


def short_time(ts: str, tz: tzinfo | None) -> str:
    """`YYYY-MM-DD HH:MM:SS` in `tz` (None: the local zone; the column's heading names it);
    the stored text if it is not ISO-8601. (Without the year, last December's events read
    as this year's.)"""
    try:
        moment = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")


def zone_name(tz: tzinfo | None) -> str:
    """The zone the times are in, as the Time column's heading says it ("UTC", "CET")."""
    return datetime.now(tz).astimezone(tz).tzname() or "local time"


def headings(tz: tzinfo | None) -> tuple[str, ...]:
    return (f"Time ({zone_name(tz)})", *COLUMNS[1:])


def _one_line(text: str) -> str:
    return " ".join(visible(text).split())


def event_cells(
    event: AuditEvent, styles: Mapping[str, Style], tz: tzinfo | None
) -> tuple[Text, ...]:
    """The cells of `event`'s row: time, thread, agent, kind, short detail."""
    muted = Style(dim=True)
    return (
        Text(short_time(event.ts, tz), style=muted, end=""),
        Text(_one_line(event.thread_id or "—"), end=""),
        Text(_one_line(event.agent or "—"), end=""),
        Text(event.kind, style=styles.get(event.kind, muted), end=""),
        Text(event.summary(SUMMARY_CHARS), end=""),
    )


def column_widths(width: int, longest_thread: int = 0) -> tuple[int, ...]:
    """Content widths of the five columns for a table `width` cells wide, whose longest
    thread id is `longest_thread` cells."""
    fixed = list(_FIXED_WIDTHS)
    fixed[_THREAD_COLUMN] = min(max(longest_thread, fixed[_THREAD_COLUMN]), _MAX_THREAD_WIDTH)
    available = width - _GAP * (len(COLUMNS) + 1)

    def shortfall() -> int:
        return sum(fixed) + _MIN_DETAIL_WIDTH - available

    # Narrow terminal: before starving the detail column, give up what costs least to read,
    # in this order: "_agent" after each agent's name, the seconds, and last the start of
    # thread ids (their date and time are in the Time column; the pane below has them whole).
    if shortfall() > 0:
        fixed[_AGENT_COLUMN] = _SHORT_AGENT_WIDTH
    if shortfall() > 0:
        fixed[_TIME_COLUMN] = _SHORT_TIME_WIDTH
    if shortfall() > 0:
        thread = fixed[_THREAD_COLUMN]
        fixed[_THREAD_COLUMN] = max(thread - shortfall(), _MIN_SQUEEZED_WIDTH)
    return (*fixed, max(available - sum(fixed), 1))


def short_agent(agent: str) -> str:
    """'complaints_agent' -> 'complaints': what tells the agents apart."""
    return agent.removesuffix("_agent") or agent


def fit_column(column: int, text: str, width: int) -> str:
    """`text` fitted to `width` cells in `column`: a narrow agent column shows every agent by
    its short name, a narrow time column drops the seconds; anything else is cut."""
    if column == _AGENT_COLUMN and width < _FIXED_WIDTHS[_AGENT_COLUMN]:
        text = short_agent(text)
    elif column == _TIME_COLUMN and cell_len(text) > width and _TIME_WITH_SECONDS.match(text):
        text = text[:_SHORT_TIME_WIDTH]
    return fit_cell(text, width, keep_end=column == _THREAD_COLUMN)


class AuditEventTable(ScrollView, can_focus=True):
    """Loaded audit events with a row cursor; posts `NearEnd` when the view nears the last row."""

    ALLOW_SELECT = False
    BINDINGS: ClassVar[list[BindingType]] = [
        # Not in the footer: the pane below already shows the event under the cursor, and the
        # viewer's own keys (through "r Refresh") need all of a 70-column footer.
        Binding("enter", "select_cursor", "Detail", show=False, id="audit_viewer.detail"),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First event", show=False),
        Binding("end", "last", "Last loaded event", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "audit-table--header",
        "audit-table--cursor",
        "audit-table--even-row",
    }
    # Mirrors DataTable's look, so the table sits well in every Textual theme.
    DEFAULT_CSS = """
    AuditEventTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus {
            background-tint: $foreground 5%;
            & > .audit-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
        & > .audit-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .audit-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .audit-table--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .audit-table--even-row {
            background: $surface-darken-1 40%;
        }
    }
    """
    # Ask for the next page this many rows before the end, so scrolling rarely waits.
    NEAR_END_ROWS = 50

    cursor_row: reactive[int] = reactive(0, init=False, always_update=True)

    class EventHighlighted(Message):
        """The cursor moved to `event` (None: the table is empty)."""

        def __init__(self, event: AuditEvent | None) -> None:
            super().__init__()
            self.event = event

    class EventSelected(Message):
        """Enter (or a click on the highlighted row) on `event`."""

        def __init__(self, event: AuditEvent) -> None:
            super().__init__()
            self.event = event

    class NearEnd(Message):
        """The cursor or the scroll position is close to the last loaded row."""

    def __init__(self, *, tz: tzinfo | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events: list[AuditEvent] = []
        self._index: dict[int, int] = {}
        self._tz = tz
        self._styles: dict[str, Style] = {}
        self._cells: LRUCache[int, tuple[Text, ...]] = LRUCache(1024)
        self._strips: LRUCache[tuple[int, int, int], Strip] = LRUCache(1024)
        # The row count at which NearEnd was last posted: once per page is enough.
        self._near_end_posted_at = -1
        self._replacing = False
        self._paint_callbacks: list[Callable[[], object]] = []
        self._line_styles: dict[str, Style] | None = None
        self._headings = headings(tz)
        # The widest thread id loaded, in cells (the Thread column fits it when it can).
        self._longest_thread = 0

    # --- data -----------------------------------------------------------------------------

    @property
    def last_id(self) -> int | None:
        """The id of the oldest loaded event (the keyset for the next page)."""
        return self.events[-1].id if self.events else None

    @property
    def highlighted_event(self) -> AuditEvent | None:
        """The event under the cursor."""
        row = self.cursor_row
        return self.events[row] if 0 <= row < len(self.events) else None

    def cells(self, row: int) -> tuple[Text, ...]:
        """The cells shown for `row` (time, thread, agent, kind, detail)."""
        event = self.events[row]
        cells = self._cells.get(event.id)
        if cells is None:
            cells = event_cells(event, self._styles, self._tz)
            self._cells.set(event.id, cells)
        return cells

    def set_kind_styles(self, styles: dict[str, Style]) -> None:
        """Colour kinds with `styles` (see `kind_styles`)."""
        self._styles = styles
        self._cells.clear()
        self._forget_rendering()
        self.refresh()

    def replace_events(self, events: Iterable[AuditEvent]) -> None:
        """Show `events` instead of what is loaded, cursor on the first row."""
        # Quiet while the old cursor and scroll offset meet the new rows: they would
        # look "near the end" and fetch a page nobody asked for.
        self._replacing = True
        try:
            self.events = []
            self._index = {}
            self._longest_thread = 0
            self._cells.clear()
            self._strips.clear()
            self._near_end_posted_at = -1
            self.append_events(events)
            self.scroll_to(y=0, animate=False, immediate=True)
            self.cursor_row = 0
        finally:
            self._replacing = False

    def append_events(self, events: Iterable[AuditEvent]) -> int:
        """Add `events` after the loaded rows (skipping ids already shown); return how many."""
        added = 0
        longest = self._longest_thread
        for event in events:
            if event.id not in self._index:
                self._index[event.id] = len(self.events)
                self.events.append(event)
                added += 1
                longest = max(longest, cell_len(event.thread_id or ""))
        if longest != self._longest_thread:
            self._longest_thread = longest
            self._strips.clear()  # every row's columns moved
        self.virtual_size = Size(0, len(self.events) + 1)
        self.refresh()
        # Measure against the laid-out table, not the half-built one.
        self.call_after_refresh(self._check_near_end)
        return added

    def move_to_event(self, event_id: int) -> bool:
        """Put the cursor on the row of `event_id` if it is loaded."""
        row = self._index.get(event_id)
        if row is None:
            return False
        self.cursor_row = row
        return True

    # --- cursor and scrolling -------------------------------------------------------------

    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self.events) - 1))

    def watch_cursor_row(self) -> None:
        self._scroll_cursor_into_view()
        self.refresh()
        self.post_message(self.EventHighlighted(self.highlighted_event))
        self._check_near_end()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._check_near_end()

    @property
    def _page_rows(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def _scroll_cursor_into_view(self) -> None:
        top = round(self.scroll_y)
        row = self.cursor_row
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + self._page_rows:
            self.scroll_to(y=row - self._page_rows + 1, animate=False, immediate=True)

    def _check_near_end(self) -> None:
        count = len(self.events)
        if self._replacing or not count or self._near_end_posted_at == count:
            return
        last_visible_row = round(self.scroll_y) + self._page_rows - 1
        if count - 1 - max(self.cursor_row, last_visible_row) <= self.NEAR_END_ROWS:
            self._near_end_posted_at = count
            self.post_message(self.NearEnd())

    def action_cursor_up(self) -> None:
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        self.cursor_row += 1

    def action_page_up(self) -> None:
        self.cursor_row -= self._page_rows

    def action_page_down(self) -> None:
        self.cursor_row += self._page_rows

    def action_first(self) -> None:
        self.cursor_row = 0

    def action_last(self) -> None:
        self.cursor_row = len(self.events) - 1

    def action_select_cursor(self) -> None:
        event = self.highlighted_event
        if event is not None:
            self.post_message(self.EventSelected(event))

    def on_click(self, click: events.Click) -> None:
        offset = click.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = round(self.scroll_y) + offset.y - 1
        if row == self.cursor_row:
            self.action_select_cursor()
        elif row < len(self.events):
            self.cursor_row = row

    # --- rendering ------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_rendering()

    def on_focus(self) -> None:
        self._forget_rendering()

    def on_blur(self) -> None:
        self._forget_rendering()

    def _forget_rendering(self) -> None:
        self._strips.clear()
        self._line_styles = None

    def call_after_paint(self, callback: Callable[[], object]) -> None:
        """Call `callback` once this table's next repaint is on screen.

        Unlike `call_after_refresh`, it doesn't queue behind the screen's other after-refresh
        work (a footer rebuild costs 50-150 ms here): it runs from this widget's queue.
        """
        self._paint_callbacks.append(callback)
        self.refresh()

    def _styles_for_lines(self) -> dict[str, Style]:
        # Resolving a widget's style walks its ancestors: once per style change, not per line.
        if self._line_styles is None:
            base = self.rich_style
            self._line_styles = {
                "base": base,
                **{
                    name: base + self.get_component_rich_style(f"audit-table--{name}")
                    for name in ("header", "cursor", "even-row")
                },
            }
        return self._line_styles

    def render_line(self, y: int) -> Strip:
        if self._paint_callbacks:
            # Painting now; the compositor finishes the frame before any queue runs.
            callbacks, self._paint_callbacks = self._paint_callbacks, []
            for callback in callbacks:
                self.call_later(callback)
        width = self.scrollable_content_region.width
        styles = self._styles_for_lines()
        if y == 0:
            labels = tuple(Text(label, end="") for label in self._headings)
            return self._strip(labels, width, styles["header"])
        row = round(self.scroll_y) + y - 1
        if row >= len(self.events):
            return Strip.blank(width, styles["base"])
        cursor = row == self.cursor_row
        key = (row, width, 2 if cursor else row % 2)
        strip = self._strips.get(key)
        if strip is None:
            style = styles["cursor" if cursor else "even-row" if row % 2 else "base"]
            strip = self._strip(self.cells(row), width, style)
            self._strips.set(key, strip)
        return strip

    def _strip(self, cells: tuple[Text, ...], width: int, style: Style) -> Strip:
        # Segments straight from each cell's text and style (every cell is one styled run):
        # 4x cheaper than assembling, truncating and rendering a Rich Text per row.
        gap = Segment(" " * _GAP)
        segments: list[Segment] = []
        widths = column_widths(width, self._longest_thread)
        for column, (cell, cell_width) in enumerate(zip(cells, widths, strict=True)):
            cell_style = cell.style if isinstance(cell.style, Style) else None
            fitted = fit_column(column, cell.plain, cell_width)
            segments += (gap, Segment(fitted, cell_style))
        strip = Strip(segments, _GAP * len(cells) + sum(widths))
        return strip.crop_extend(0, width, style).apply_style(style)


def fit_cell(text: str, width: int, *, keep_end: bool = False) -> str:
    """`text` padded or cut (with `…`) to exactly `width` cells; wide characters count twice.
    With `keep_end`, cut at the start: what tells thread ids apart is at their end (the
    date and time they begin with are in the Time column)."""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    if keep_end:
        return "…" + set_cell_size(text[::-1], width - 1)[::-1]
    return set_cell_size(text, width - 1) + "…"
