"""A conversation as a Markdown file: the stored transcript, not what happens to be on screen."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from agents.backend import AGENT_TITLES, ChatLine, ThreadInfo, visible

# Punctuation that makes Markdown anywhere in a line (`&` an entity: "&copy;" read as ©).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")
# And at a line's start: a list item ("- ", "1. "; "+" and ")" are escaped above), a rule
# ("---") or, under another line of the same quote, a heading's underline ("===").
_LINE_START = re.compile(r"^(\s*)(=|-(?=[\s-]|$)|\d{1,9}\.(?=\s|$))", re.MULTILINE)


def escape_markdown(text: str) -> str:
    """Customer text and notes read literally in any Markdown viewer."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", visible(text))
    return _LINE_START.sub(lambda m: f"{m[1]}{m[2][:-1]}\\{m[2][-1]}", escaped)


def transcript_markdown(
    thread_id: str,
    info: ThreadInfo | None,
    lines: Sequence[ChatLine],
    *,
    exported_at: datetime | None,
    status: str | None = None,
) -> str:
    """The whole conversation: customer lines quoted, replies as the Markdown they are.
    (`exported_at` None: shown, not exported, by `shopbot show`, which says its `status`,
    Markdown whose stored parts are escaped already.)"""
    customer = info.customer if info and info.customer else None
    out = [
        f"# ShopBot conversation {thread_id}",
        "",
        f"- Customer: {escape_markdown(customer) if customer else 'not given'}",
        f"- Started: {info.created_at if info else 'not started'}",
    ]
    if status is not None:
        out.append(f"- Status: {status}")
    if exported_at is not None:
        out.append(f"- Exported: {exported_at.isoformat(timespec='seconds')}")
    out.append("")
    for line in lines:
        if line.role == "customer":
            out.append(f"**{escape_markdown(customer) if customer else 'Customer'}:**")
            out.append("")
            out.extend(f"> {escape_markdown(part)}" for part in line.text.splitlines() or [""])
        elif line.role == "assistant":
            title = AGENT_TITLES.get(line.agent or "", line.agent or "ShopBot")
            out.append(f"**{title}:**")
            out.append("")
            out.append(visible(line.text))
        else:
            out.append(f"*{escape_markdown(line.text)}*")
        out.append("")
    return "\n".join(out)


def export_chat(
    home: Path,
    thread_id: str,
    info: ThreadInfo | None,
    lines: Sequence[ChatLine],
    *,
    now: datetime,
) -> Path:
    """Write `<home>/exports/<thread>-<time>.md` and return its path (blocking: use a thread)."""
    folder = home / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{thread_id}-{now:%Y%m%d-%H%M%S}"
    path = folder / f"{stem}.md"
    copy = 1
    while path.exists():  # two exports in the same second keep both
        copy += 1
        path = folder / f"{stem}-{copy}.md"
    path.write_text(transcript_markdown(thread_id, info, lines, exported_at=now), encoding="utf-8")
    return path
