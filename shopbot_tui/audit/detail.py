"""The audit viewer's detail pane: the six fields of one event and its detail as highlighted JSON.

Everything is `Content` built from literal text (never markup), so customer text such as
`[link=...]` shows as typed; JSON escapes control characters, so ESC reads as `\\u001b`.
"""

from __future__ import annotations

import json
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.widgets import Static

from agents.backend import AuditEvent, visible
from shopbot_tui.audit.table import ALARM_KINDS

_LABEL_STYLE = "$text-muted"


def fields_content(event: AuditEvent | None) -> Content:
    """id, ts, thread_id, agent and kind, one per line, values literal."""
    if event is None:
        return Content.styled("No event selected", "$text-muted italic")
    kind_style = "bold $text-error" if event.kind in ALARM_KINDS else "bold"
    rows: list[tuple[str, str, str]] = [
        ("id", str(event.id), ""),
        ("ts", event.ts, ""),
        ("thread_id", visible(event.thread_id or "—"), ""),
        ("agent", visible(event.agent or "—"), ""),
        ("kind", event.kind, kind_style),
    ]
    parts: list[str | tuple[str, str]] = []
    for label, value, style in rows:
        parts.extend(((f"{label:<10}", _LABEL_STYLE), (value, style), "\n"))
    return Content.assemble(*parts[:-1])


# Wrapping text costs Textual ~15 ms per 1,000 characters here (a 100 KB paste froze the
# pane for 1.5 s), so long values are cut for display; the export keeps them whole.
MAX_VALUE_CHARS = 1_000
MAX_DETAIL_CHARS = 6_000
CLIPPED_NOTE = "Long values are cut here; export (x) writes the full event."


def _clip(value: Any) -> tuple[Any, bool]:
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        return value[:MAX_VALUE_CHARS] + "…", True
    if isinstance(value, dict):
        pairs = [(key, _clip(item)) for key, item in value.items()]
        return {key: item for key, (item, _) in pairs}, any(cut for _, (_, cut) in pairs)
    if isinstance(value, list):
        items = [_clip(item) for item in value]
        return [item for item, _ in items], any(cut for _, cut in items)
    return value, False


def detail_json(event: AuditEvent | None) -> tuple[str, bool]:
    """The event's detail pretty-printed, and whether it was cut for display."""
    if event is None:
        return "", False
    detail, clipped = _clip(event.detail)
    text = json.dumps(detail, indent=2, ensure_ascii=False)
    if len(text) > MAX_DETAIL_CHARS:
        return text[:MAX_DETAIL_CHARS] + "…", True
    return text, clipped


class AuditEventDetail(Horizontal):
    """The selected event: fields on the left, the detail JSON (scrollable) on the right."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.event: AuditEvent | None = None

    def compose(self) -> ComposeResult:
        yield Static(fields_content(None), id="audit-detail-fields")
        with VerticalScroll(id="audit-detail-body"):
            yield Static(Content(""), id="audit-detail-json")

    def show_event(self, event: AuditEvent | None) -> None:
        """Show `event` (or the empty state for None)."""
        if event == self.event and self.is_mounted:
            return
        self.event = event
        self.border_title = f"Event {event.id}" if event else "Event"
        self.query_one("#audit-detail-fields", Static).update(fields_content(event))
        code, clipped = detail_json(event)
        shown = highlight(code, language="json") if code else Content("")
        if clipped:
            shown = Content.assemble(shown, "\n", (CLIPPED_NOTE, "$text-muted italic"))
        self.query_one("#audit-detail-json", Static).update(shown)
        self.query_one("#audit-detail-body", VerticalScroll).scroll_home(animate=False)

    def open_to_read(self, reading: bool = True) -> None:
        """Opened large (enter) or back to its place below the table (esc)."""
        event = self.event
        title = f"Event {event.id}" if event else "Event"
        self.border_title = f"{title} · esc back to the list" if reading else title

    def focus_body(self) -> None:
        """Focus the scrollable JSON, for long details."""
        self.query_one("#audit-detail-body", VerticalScroll).focus()
