"""The audit-log viewer: filter, page through, inspect and export audit events, newest first.

Every read goes to the backend in a worker that only posts messages; the handlers here own
the widgets (Harlequin's rule). Each query gets a generation number: a newer filter cancels
the older workers (`exclusive=True`) and any result from an older generation is dropped.
Pages are keyed by id (`audit_page(before_id=...)`), so 100k events cost what 200 do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TextIO, cast

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Footer, Header, Input, LoadingIndicator, Select, Static

from agents.backend import AuditEvent, AuditQuery, InputError
from shopbot_tui.audit.detail import AuditEventDetail
from shopbot_tui.audit.filters import AuditFilterBar
from shopbot_tui.audit.table import AuditEventTable, kind_styles
from shopbot_tui.breakpoints import apply_breakpoints

PAGE_SIZE = 200
LOADING_DELAY_S = 0.15
# A Select with thousands of options is slow to build and useless to scroll: offer the most
# recently active threads (plus the preset one); the free-text filter finds the others.
MAX_THREAD_OPTIONS = 200

_NO_EVENT = object()


class _PageLoaded(Message):
    def __init__(self, generation: int, events: list[AuditEvent], *, first: bool) -> None:
        super().__init__()
        self.generation = generation
        self.events = events
        self.first = first


class _CountLoaded(Message):
    def __init__(self, generation: int, count: int) -> None:
        super().__init__()
        self.generation = generation
        self.count = count


class _ThreadsLoaded(Message):
    def __init__(self, thread_ids: list[str]) -> None:
        super().__init__()
        self.thread_ids = thread_ids


class _LoadFailed(Message):
    def __init__(
        self, generation: int, error: str, *, page: bool, bad_search: bool = False
    ) -> None:
        super().__init__()
        self.generation = generation
        self.error = error
        self.page = page
        self.bad_search = bad_search


class _ExportFinished(Message):
    def __init__(self, path: Path | None, count: int, error: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.count = count
        self.error = error


if TYPE_CHECKING:
    from agents.backend import Backend


def new_export_file(folder: Path) -> tuple[Path, TextIO]:
    """A new timestamped JSONL file in `folder`, open for writing."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1, 100):
        suffix = "" if attempt == 1 else f"-{attempt}"
        path = folder / f"audit-{stamp}{suffix}.jsonl"
        try:
            # "x": never overwrite an earlier export from the same second.
            handle = path.open("x", encoding="utf-8", newline="\n")
        except FileExistsError:
            continue
        return path, handle
    raise FileExistsError(f"Too many exports named audit-{stamp}*.jsonl in {folder}")


@dataclass(frozen=True)
class OpenAt:
    """The conversation to open (`o`), at the moment of the event under the cursor."""

    thread_id: str
    ts: str


class AuditViewerScreen(Screen[OpenAt | None]):
    """Audit events in a table with filters, a detail pane and JSONL export. Dismissed with
    an `OpenAt` when the person asks to open the conversation of the event under the cursor.

    Benchmark hooks: `first_page_shown` is set once the first page is painted,
    `results_shown` whenever the current filter's first page is painted, and a
    `ResultsShown` message (bubbling to the app) carries how long that took.
    """

    TITLE = "Audit log"
    # Absolute, so a subclass defined elsewhere (tests, the app) still finds it.
    CSS_PATH = Path(__file__).with_name("audit_viewer.tcss")
    AUTO_FOCUS = "#audit-table"
    # Narrower than this, the match count moves from the filter bar to the header.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (90, "-wide")]  # noqa: RUF012 (as ChatScreen)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="audit_viewer.back"),
        Binding("q", "close", "Close", show=False, id="audit_viewer.close"),
        Binding("slash", "focus_search", "Search", key_display="/", id="audit_viewer.search"),
        Binding("t", "pick_thread", "Thread", id="audit_viewer.thread"),
        Binding("k", "pick_kind", "Kind", id="audit_viewer.kind"),
        Binding("w", "pick_period", "When", id="audit_viewer.when"),
        Binding("x", "export", "Export", id="audit_viewer.export"),
        Binding("r", "refresh", "Refresh", id="audit_viewer.refresh"),
        Binding(
            "o",
            "open_thread",
            "Open",
            tooltip="Open the conversation of the event under the cursor",
            id="audit_viewer.open_thread",
        ),
    ]

    class ResultsShown(Message):
        """The first page of a query is on screen (`elapsed_s` since the query started)."""

        def __init__(
            self, audit_query: AuditQuery, rows: int, elapsed_s: float, *, first: bool
        ) -> None:
            super().__init__()
            self.audit_query = audit_query
            self.rows = rows
            self.elapsed_s = elapsed_s
            self.first = first

    def __init__(
        self,
        backend: Backend,
        *,
        export_dir: Path,
        thread_id: str | None = None,
        tz: tzinfo | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """`backend`: where the audit log is read; `export_dir`: where `x` writes its files.
        `tz` is the zone for the time column and "Today" (None: local), `clock` what "now"
        is for the period filter; tests pin both."""
        super().__init__()
        self._backend = backend
        self.export_dir = export_dir
        self.first_page_shown = asyncio.Event()
        self.results_shown = asyncio.Event()
        self.last_export: Path | None = None
        self.match_count: int | None = None
        self._initial_thread = thread_id
        self._tz = tz
        self._clock = clock
        self._query: AuditQuery | None = None
        self._generation = 0
        self._started = time.perf_counter()
        self._awaiting_first_page = False
        self._loading_more = False
        self._exhausted = False
        self._keep_event_id: int | None = None
        self._newest_before_refresh: int | None = None
        self._pending_detail: object = _NO_EVENT
        self._latest_page: _PageLoaded | None = None
        self._count_text = ""
        # Held, not queried: a query walks the whole screen (the thread filter's options too).
        self._table = AuditEventTable(tz=self._tz, id="audit-table")
        # The filter whose list its key opened (see `_pick`).
        self._picked_by_key: Select[str] | None = None

    def show_count(self, text: str) -> None:
        """Show `text` ("1,234 events") in the filter bar, or in the header when the bar has
        no room for it (a narrow terminal: see audit_viewer.tcss)."""
        self._count_text = text
        self.query_one(AuditFilterBar).set_count_text(text)
        self.sub_title = text if self.has_class("-narrow") else ""

    def on_resize(self, _event: events.Resize) -> None:
        # After Textual's own handler has set the width class (-narrow / -wide).
        self.show_count(self._count_text)

    @property
    def current_query(self) -> AuditQuery:
        """The filters whose results are shown (or loading)."""
        return self._query or AuditQuery(thread_id=self._initial_thread)

    def compose(self) -> ComposeResult:
        apply_breakpoints(self)  # (before the widgets below are styled)
        # Query first: the worker connects and reads the first page while the widgets below
        # mount, which is most of the "open" time; on_mount shows the page if it is in.
        self._run_query(self.current_query, force=True)
        yield Header(icon="≡")
        yield AuditFilterBar(
            thread_id=self._initial_thread, tz=self._tz, clock=self._clock, id="audit-filters"
        )
        with Vertical(id="audit-results"):
            yield self._table
            yield LoadingIndicator(id="audit-loading")
            yield Static("", id="audit-empty", markup=False)
            yield AuditEventDetail(id="audit-detail")
        yield Footer()

    def on_mount(self) -> None:
        for select in self.query_one(AuditFilterBar).query(Select).results(Select):
            self.watch(select, "expanded", partial(self._list_toggled, select), init=False)
        table = self.query_one(AuditEventTable)
        table.set_kind_styles(kind_styles(self.app.theme_variables))
        self.app.theme_changed_signal.subscribe(self, self._restyle)
        self.show_count("counting…")
        # The page query started in compose() has usually finished by now, but its message
        # waits behind the screen's first full paint: show it now, in that paint.
        if self._latest_page is not None:
            self._show_page(self._latest_page)
        # The first page usually lands before the first frame; showing the indicator at
        # once would cost two extra relayouts (in and out) and an animation in between.
        self.set_timer(LOADING_DELAY_S, self._show_loading)

    def _show_loading(self) -> None:
        if self._awaiting_first_page and not self.first_page_shown.is_set():
            # Not `table.loading`: a loading widget can't keep the focus.
            self.query_one("#audit-results").add_class("-loading")

    def on_unmount(self) -> None:
        self.app.theme_changed_signal.unsubscribe(self)

    def _restyle(self, _theme: Theme) -> None:
        self.query_one(AuditEventTable).set_kind_styles(kind_styles(self.app.theme_variables))

    # --- filters ------------------------------------------------------------------------

    def set_filters(
        self,
        *,
        thread_id: str | None = None,
        kind: str | None = None,
        period: str | None = None,
        text: str = "",
    ) -> None:
        """Set every filter at once and query now (no debounce): for benchmarks and the app.
        `period` is a key of `audit_periods.PERIODS` ("1h"), ending now."""
        bar = self.query_one(AuditFilterBar)
        query = AuditQuery(
            thread_id=thread_id or None,
            kinds=(kind,) if kind else (),
            since=bar.since(period),
            text=text.strip() or None,
        )
        # Query first: showing an unlisted thread rebuilds the thread list (~15 ms), which
        # then overlaps the database work instead of delaying it.
        self._run_query(query)
        bar.set_filters(query, period=period)

    @on(AuditFilterBar.Changed)
    def _filters_changed(self, message: AuditFilterBar.Changed) -> None:
        self._run_query(message.audit_query)
        if isinstance(self.focused, Select) and not self.focused.expanded:
            # Chosen from its list: the results take the keys, as after a search's enter.
            # Left on the filter, the next enter (to see an event) opened its list again.
            self._table.focus()

    @on(Input.Submitted, "#audit-search")
    def _search_submitted(self) -> None:
        self.query_one(AuditEventTable).focus()

    def _run_query(self, query: AuditQuery, *, force: bool = False) -> None:
        if query == self._query and not force:
            return
        self._query = query
        self._generation += 1
        self._started = time.perf_counter()
        self._awaiting_first_page = True
        self._loading_more = False
        self._exhausted = False
        self.match_count = None
        self.results_shown.clear()
        if self.is_mounted:
            self.show_count("counting…")
        self._load_page(self._generation, query, None)

    # --- workers: the backend only, results as messages --------------------------------

    async def _problem(self, exc: Exception) -> str:
        return await self._backend.describe_failure(exc)

    @work(exclusive=True, group="audit-page", exit_on_error=False)
    async def _load_page(self, generation: int, query: AuditQuery, before_id: int | None) -> None:
        try:
            events = await self._backend.audit_page(query, limit=PAGE_SIZE, before_id=before_id)
        except InputError as exc:  # the search itself (too many words): the person can fix it
            self.post_message(_LoadFailed(generation, str(exc), page=True, bad_search=True))
            return
        except Exception as exc:
            self.post_message(_LoadFailed(generation, await self._problem(exc), page=True))
            return
        loaded = _PageLoaded(generation, events, first=before_id is None)
        self._latest_page = loaded  # on_mount takes it early (see there)
        self.post_message(loaded)

    @work(exclusive=True, group="audit-count", exit_on_error=False)
    async def _count(self, generation: int, query: AuditQuery) -> None:
        try:
            count = await self._backend.audit_count(query)
        except Exception as exc:
            self.post_message(_LoadFailed(generation, await self._problem(exc), page=False))
            return
        self.post_message(_CountLoaded(generation, count))

    @work(exclusive=True, group="audit-threads", exit_on_error=False)
    async def _load_threads(self) -> None:
        try:
            thread_ids = await self._backend.audit_thread_ids()
        except Exception:
            return  # the page worker reports a broken database; the filter keeps its options
        self.post_message(_ThreadsLoaded(thread_ids[:MAX_THREAD_OPTIONS]))

    @work(group="audit-export", exit_on_error=False)
    async def _export(self, query: AuditQuery) -> None:
        try:
            path, handle = await asyncio.to_thread(new_export_file, self.export_dir)
            try:
                count = await self._backend.audit_export(query, handle)
            finally:
                await asyncio.to_thread(handle.close)
        except Exception as exc:
            self.post_message(_ExportFinished(None, 0, await self._problem(exc)))
            return
        self.post_message(_ExportFinished(path, count))

    # --- results ------------------------------------------------------------------------

    @on(_PageLoaded)
    def _show_page(self, message: _PageLoaded) -> None:
        if message.generation != self._generation:
            return  # a newer filter has taken over
        table = self.query_one(AuditEventTable)
        if len(message.events) < PAGE_SIZE:
            self._exhausted = True
        if not message.first:
            self._loading_more = False
            table.append_events(message.events)
            return
        if not self._awaiting_first_page:
            return  # already shown from on_mount
        self._awaiting_first_page = False
        # Counting can take 100 ms for a common word: start it once the page is in.
        self._count(message.generation, self.current_query)
        table.replace_events(message.events)
        if self._keep_event_id is not None:
            table.move_to_event(self._keep_event_id)
        self._keep_event_id = None
        self._report_new_events(message.events)
        self._show_empty_state(not message.events)
        table.call_after_paint(partial(self._mark_shown, message.generation, len(message.events)))

    def _mark_shown(self, generation: int, rows: int) -> None:
        if generation != self._generation:
            return
        first = not self.first_page_shown.is_set()
        if first:
            self._load_threads()  # after the first paint, which it would only slow down
        self.first_page_shown.set()
        self.results_shown.set()
        elapsed = time.perf_counter() - self._started
        self.post_message(self.ResultsShown(self.current_query, rows, elapsed, first=first))

    def _report_new_events(self, events: list[AuditEvent]) -> None:
        newest_before, self._newest_before_refresh = self._newest_before_refresh, None
        if newest_before is None:
            return
        new = sum(1 for event in events if event.id > newest_before)
        more = "+" if new == len(events) == PAGE_SIZE else ""
        self.notify(f"{new:,}{more} new events" if new else "No new events", markup=False)

    def _show_empty_state(self, empty: bool, *, because: str | None = None) -> None:
        results = self.query_one("#audit-results")
        results.remove_class("-loading")
        results.set_class(empty, "-empty")
        if empty:
            filtered = self.current_query != AuditQuery()
            default = "No events match these filters" if filtered else "The audit log is empty"
            self.query_one("#audit-empty", Static).update(because or default)

    @on(_CountLoaded)
    def _show_count(self, message: _CountLoaded) -> None:
        if message.generation != self._generation:
            return
        self.match_count = message.count
        noun = "event" if message.count == 1 else "events"
        self.show_count(f"{message.count:,} {noun}")

    @on(_ThreadsLoaded)
    def _fill_thread_filter(self, message: _ThreadsLoaded) -> None:
        self.query_one(AuditFilterBar).set_thread_ids(message.thread_ids)

    @on(_LoadFailed)
    def _show_failure(self, message: _LoadFailed) -> None:
        if message.generation != self._generation:
            return
        self.show_count("")
        error = message.error
        if message.bad_search:
            because = error
            self.notify(error, title="Search", severity="warning", markup=False)
        else:
            because = f"The audit log can't be read: {error}"
            self.notify(error, title="Audit log unavailable", severity="error", markup=False)
        if message.page and self._awaiting_first_page:
            self._awaiting_first_page = False
            self.query_one(AuditEventTable).replace_events([])
            self._show_empty_state(True, because=because)
        self._loading_more = False

    @on(_ExportFinished)
    def _export_finished(self, message: _ExportFinished) -> None:
        if message.path is None:
            self.notify(message.error or "", title="Export failed", severity="error", markup=False)
            return
        self.last_export = message.path
        noun = "event" if message.count == 1 else "events"
        self.notify(f"{message.count:,} {noun} → {message.path}", title="Exported", markup=False)

    # --- table and detail ---------------------------------------------------------------

    @on(AuditEventTable.NearEnd)
    def _load_more(self) -> None:
        if self._exhausted or self._loading_more or self._awaiting_first_page:
            return
        last_id = self.query_one(AuditEventTable).last_id
        if last_id is not None:
            self._loading_more = True
            self._load_page(self._generation, self.current_query, last_id)

    @on(AuditEventTable.EventHighlighted)
    def _highlighted(self, message: AuditEventTable.EventHighlighted) -> None:
        # After the next paint, and once per paint: the pane's new height relayouts the
        # whole screen, which should neither delay new rows nor repeat on held arrow keys.
        scheduled = self._pending_detail is not _NO_EVENT
        self._pending_detail = message.event
        if not scheduled:
            self.call_after_refresh(self._show_pending_detail)

    def _show_pending_detail(self) -> None:
        event, self._pending_detail = self._pending_detail, _NO_EVENT
        if event is not _NO_EVENT:
            self.query_one(AuditEventDetail).show_event(cast("AuditEvent | None", event))

    def _open_at(self) -> OpenAt | None:
        event = self._table.highlighted_event
        if event is None or not event.thread_id:
            return None
        return OpenAt(event.thread_id, event.ts)

    @on(AuditEventTable.EventSelected)
    def _selected(self, message: AuditEventTable.EventSelected) -> None:
        """Enter: the event's pane opens over most of the results, to read it whole (it
        only took the focus, and looked the same); esc gives the table its room back."""
        detail = self.query_one(AuditEventDetail)
        detail.show_event(message.event)
        self.query_one("#audit-results").add_class("-reading")
        detail.open_to_read()
        detail.focus_body()

    def _stop_reading(self) -> None:
        self.query_one("#audit-results").remove_class("-reading")
        self.query_one(AuditEventDetail).open_to_read(False)

    # --- actions ------------------------------------------------------------------------

    def action_back(self) -> None:
        """Escape: from a filter or the detail pane back to the table, from the table out."""
        table = self.query_one(AuditEventTable)
        if self.focused is not None and self.focused is not table:
            self._stop_reading()
            table.focus()
        else:
            self.action_close()

    def action_close(self) -> None:
        """Leave the viewer."""
        self.dismiss()

    def action_open_thread(self) -> None:
        """Leave the viewer for the conversation of the event under the cursor."""
        # (Always offered: dimming it as the cursor moves rebuilt the footer, which doubled
        # the time a filter takes to show.)
        if (at := self._open_at()) is not None:
            self.dismiss(at)
        elif self._table.highlighted_event is not None:
            self.notify("This event belongs to no conversation.", severity="warning")
        else:  # (it said nothing at all: the key seemed broken)
            self.notify("No event is listed: nothing to open.", severity="warning")

    def action_focus_search(self) -> None:
        """Focus the free-text filter."""
        self.query_one("#audit-search", Input).focus()

    def action_pick_thread(self) -> None:
        """Open the thread filter."""
        self._pick("audit-thread")

    def action_pick_kind(self) -> None:
        """Open the kind filter."""
        self._pick("audit-kind")

    def action_pick_period(self) -> None:
        """Open the time filter (the last hour, today, …)."""
        self._pick("audit-when")

    def _pick(self, select_id: str) -> None:
        """A filter's list opened by its key. Closed without a choice (esc), the keys go back
        to the results, as after a choice: Textual leaves them on the filter, where the next
        ↓ opened the list again and `o` reached no event."""
        self._picked_by_key = self.query_one(AuditFilterBar).open_select(select_id)

    def _list_toggled(self, select: Select[str], expanded: bool) -> None:
        if not expanded and self._picked_by_key is select:
            self._picked_by_key = None
            # After the Select takes the focus back from its list (its own handler, next).
            self.call_after_refresh(self._back_to_results, select)

    def _back_to_results(self, select: Select[str]) -> None:
        if self.focused is select:
            self._table.focus()

    def action_export(self) -> None:
        """Export the filtered events to a JSON-lines file."""
        if self.match_count == 0:
            self.notify("No events match these filters: nothing to export.", severity="warning")
            return
        self._export(self.current_query)

    def action_refresh(self) -> None:
        """Reload the current filter to show new events, keeping the cursor's event."""
        table = self.query_one(AuditEventTable)
        highlighted = table.highlighted_event
        self._keep_event_id = highlighted.id if highlighted else None
        self._newest_before_refresh = table.events[0].id if table.events else 0
        bar = self.query_one(AuditFilterBar)
        bar.restart_period()  # "the last hour" is the hour before now, not before choosing it
        self._run_query(bar.audit_query, force=True)
        self._load_threads()
