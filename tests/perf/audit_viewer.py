"""Section 5: the audit viewer over a 100,000-event log: time to open, time to apply a filter.

The log is generated with `AuditLog.append_many` in the shape real turns leave (turn_started,
gate checks, tool calls, hand-offs, corrections, approvals...) over 2,000 threads, one
second apart. Times run from the call (`push_screen`, `set_filters`) until the first page of
results is painted (`first_page_shown` / `results_shown`, set after the refresh that shows
them), on a terminal-like driver that renders every frame.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import App

from agents.audit.log import AuditLog
from agents.backend.local import LocalBackend
from agents.settings import Settings
from agents.store.home import checked_home
from shopbot_tui.collector import set_aside_long_lived
from tests.perf.common import Progress, Row, spread, temp_home
from tests.perf.textual_support import install_frame_clock, wait_until

OPEN_TARGET_MS = 300.0
FILTER_TARGET_MS = 100.0
VIEWER_MODULE = "shopbot_tui.audit.screen"
TERMINAL = (120, 40)
CUSTOMERS = ("Alex", "Sam", "Jordan")
REASONS = (
    "the left earcup stopped working",
    "dead pixels all over the screen",
    "the speaker crackles at any volume",
    "it arrived scratched and the box was crushed",
)


def _turn(rng: random.Random, thread: str) -> Iterator[dict[str, Any]]:
    """The audit events one turn leaves, roughly in the real mix."""
    order = f"ORD-00{rng.randint(1, 7)}"
    yield {"kind": "turn_started", "thread_id": thread, "detail": {"chars": rng.randint(8, 200)}}
    roll = rng.random()
    agent = "order_agent"
    if roll < 0.25:
        agent = "refund_agent"
        yield {
            "kind": "handoff",
            "thread_id": thread,
            "agent": "order_agent",
            "detail": {"from": "order_agent", "to": agent, "reason": "refund request"},
        }
    elif roll < 0.35:
        agent = "complaints_agent"
        yield {
            "kind": "handoff",
            "thread_id": thread,
            "agent": "order_agent",
            "detail": {"from": "order_agent", "to": agent, "reason": "complaint"},
        }
    if rng.random() < 0.08:
        bad = order.replace("0", "O", 1)
        yield {
            "kind": "gate_failed",
            "thread_id": thread,
            "agent": agent,
            "detail": {
                "gate": "order_id",
                "ok": False,
                "detail": f"Order ID '{bad}' does not match the required format ORD-XXX",
                "codes": ["order_id.format"],
                "attempt": 0,
                "extracted": {"order_id": bad},
            },
        }
        yield {
            "kind": "correction",
            "thread_id": thread,
            "agent": agent,
            "detail": {"attempt": 1, "of": 2, "error": f"Order ID '{bad}' is malformed"},
        }
    for gate in ("order_id", "ownership"):
        yield {
            "kind": "gate_passed",
            "thread_id": thread,
            "agent": agent,
            "detail": {
                "gate": gate,
                "ok": True,
                "detail": "ok",
                "codes": [],
                "attempt": 0,
                "extracted": {"order_id": order},
            },
        }
    if agent == "refund_agent":
        reason = rng.choice(REASONS)
        yield {
            "kind": "approval_requested",
            "thread_id": thread,
            "agent": agent,
            "detail": {"kind": "refund_approval", "order_id": order, "reason": reason},
        }
        decision = rng.choice(("approve", "reject", "escalate"))
        yield {
            "kind": "approval_decided",
            "thread_id": thread,
            "agent": agent,
            "detail": {"kind": "refund_approval", "decision": decision, "order_id": order},
        }
        if decision == "approve":
            yield {
                "kind": "refund_processed",
                "thread_id": thread,
                "agent": agent,
                "detail": {"order_id": order, "reference": f"RF-{rng.randrange(16**8):08X}"},
            }
    else:
        yield {
            "kind": "tool_called",
            "thread_id": thread,
            "agent": agent,
            "detail": {
                "tool": "lookup_order",
                "args": {"order_id": order},
                "result": f"Order {order}: Wireless Headphones | Status: Delivered",
            },
        }
    yield {
        "kind": "turn_finished",
        "thread_id": thread,
        "agent": agent,
        "detail": {"status": "done"},
    }


def audit_events(total: int, threads: int = 2000, seed: int = 5) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    made = 0
    while True:
        thread = f"t{rng.randrange(threads):04d}-{rng.choice(CUSTOMERS).lower()}"
        for event in _turn(rng, thread):
            if made == total:
                return
            made += 1
            yield event


LOG_START = datetime(2026, 1, 1, tzinfo=UTC)


def build_log(path: Path, total: int) -> int:
    """One event a second from LOG_START: 100k events span 28 hours."""
    start = LOG_START
    ticks = iter(range(10**9))

    def clock() -> datetime:
        return start + timedelta(seconds=next(ticks))

    with AuditLog(path, clock=clock) as log:
        return log.append_many(audit_events(total))


class ViewerHost(App[None]):
    """A bare app to open the viewer on, with one backend between openings as ShopBot's chat
    has (it keeps the audit log's connections: agents/backend/audit_connections.py)."""


def _counted(screen: Any) -> bool:
    return screen.match_count is not None


def filter_cases(thread: str) -> dict[str, dict[str, Any]]:
    """The filters measured, by name: `thread` is one of the log's threads."""
    return {
        "kind=gate_failed (rare)": {"kind": "gate_failed"},
        "kind=tool_called (common)": {"kind": "tool_called"},
        "one thread": {"thread_id": thread},
        "text 'ORD-004'": {"text": "ORD-004"},
        "text 'earcup'": {"text": "earcup"},
        "text 'zzz-not-there'": {"text": "zzz-not-there"},
        # As the table shows a detail (`key=value`): one pair, several (all must be shown),
        # and two common ones no event shows together (the index's whole lists are walked).
        "text 'order_id=ORD-004'": {"text": "order_id=ORD-004"},
        "text 'gate=order_id ok=false'": {"text": "gate=order_id ok=false"},
        "text 'order_id=ORD-004 ok=true'": {"text": "order_id=ORD-004 ok=true"},
        "text 'ok=true decision=reject' (none)": {"text": "ok=true decision=reject"},
        "kind=approval_decided + text 'decision=reject'": {
            "kind": "approval_decided",
            "text": "decision=reject",
        },
        "kind=approval_decided + text 'reject'": {"kind": "approval_decided", "text": "reject"},
        "thread + text 'ORD'": {"thread_id": thread, "text": "ORD"},
        # "Now" is the log's last second (below): the last hour holds 3,600 events.
        "period: last hour": {"period": "1h"},
        "period: last hour + text 'ORD-004'": {"period": "1h", "text": "ORD-004"},
        "period: last 7 days (all)": {"period": "7d"},
        "no filter (all)": {},
    }


async def measure_viewer(path: Path, repeats: int, total: int) -> dict[str, Any]:
    with AuditLog(path) as log:
        thread_ids = log.thread_ids()
    thread = thread_ids[len(thread_ids) // 2]
    backend = LocalBackend(Settings(home=path.parent, force_offline=True), via="app")
    # As in ShopBot, where the viewer opens after the engine is up and what start-up loaded
    # is out of the collector's sight (collector.py): a full collection over this process's
    # imports stalled a frame by ~0.1 s in about one opening of five.
    thresholds = gc.get_threshold()
    set_aside_long_lived()
    try:
        result = await _measure_in(backend, filter_cases(thread), repeats, total)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        await backend.close()
    return {**result, "thread": thread}


async def _measure_in(
    backend: LocalBackend, cases: dict[str, dict[str, Any]], repeats: int, total: int
) -> dict[str, Any]:
    app = ViewerHost()
    install_frame_clock(app)
    opens: list[float] = []
    counts: list[float] = []
    filters: dict[str, list[float]] = {}
    cold = 0.0
    async with app.run_test(headless=False, size=TERMINAL) as pilot:
        for attempt in range(repeats + 1):
            start = time.perf_counter()
            viewer_class = importlib.import_module(VIEWER_MODULE).AuditViewerScreen
            screen = viewer_class(
                backend,
                export_dir=backend.settings.home / "exports",
                clock=lambda: LOG_START + timedelta(seconds=total),
            )
            app.push_screen(screen)
            await screen.first_page_shown.wait()
            elapsed = time.perf_counter() - start
            if attempt == 0:
                cold = elapsed  # importing the viewer, parsing its CSS, connecting
            else:
                opens.append(elapsed)
            await wait_until(partial(_counted, screen), 30, "the count")
            counts.append(time.perf_counter() - start)
            if attempt == 0:
                await pilot.pause()
                for _ in range(repeats):
                    for name, query in cases.items():
                        start = time.perf_counter()
                        screen.set_filters(**query)
                        await screen.results_shown.wait()
                        filters.setdefault(name, []).append(time.perf_counter() - start)
                        await wait_until(partial(_counted, screen), 30, "the count")
            app.pop_screen()
            await pilot.pause()
    return {
        "cold_open_ms": cold * 1000,
        "open_ms": [x * 1000 for x in opens],
        "count_ms": [x * 1000 for x in counts],
        "filters_ms": {name: [x * 1000 for x in xs] for name, xs in filters.items()},
        "queries": {name: repr(q) for name, q in cases.items()},
    }


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    total = 2_000 if quick else 100_000
    repeats = 1 if quick else 7
    with temp_home("audit") as home:
        path = checked_home(home)  # the home's database: its log is what the viewer reads
        progress(f"audit: generating {total:,} events")
        start = time.perf_counter()
        await asyncio.to_thread(build_log, path, total)
        built = time.perf_counter() - start
        progress(f"audit: opening the viewer and filtering ({repeats} repeats)")
        result = await measure_viewer(path, repeats, total)
    result["build_s"] = built
    opens = spread(result["open_ms"])
    per_filter = {name: spread(xs) for name, xs in result["filters_ms"].items()}
    worst_name, worst = max(per_filter.items(), key=lambda item: item[1]["median"])
    counts = spread(result["count_ms"])
    size = f"{total:,} events"
    rows = [
        Row(
            "audit",
            "audit.open",
            f"audit viewer: open, first page painted ({size})",
            opens["median"],
            "ms",
            target=OPEN_TARGET_MS,
            samples=int(opens["n"]),
            note=(
                f"max {opens['max']:.0f} ms; first open in the process (imports the viewer, "
                "connects) "
                f"{result['cold_open_ms']:.0f} ms; match count shown after "
                f"{counts['median']:.0f} ms"
            ),
            extra=opens,
        ),
        Row(
            "audit",
            "audit.filter_worst",
            f"audit viewer: apply a filter, slowest case ({size})",
            worst["median"],
            "ms",
            target=FILTER_TARGET_MS,
            samples=int(worst["n"]),
            note=f"slowest: {worst_name} (max {worst['max']:.0f} ms)",
        ),
    ]
    for name, stats in per_filter.items():
        rows.append(
            Row(
                "audit",
                f"audit.filter.{name}",
                f"filter: {name}",
                stats["median"],
                "ms",
                samples=int(stats["n"]),
                note=f"max {stats['max']:.0f} ms",
            )
        )
    return rows, {**result, "per_filter": per_filter, "events": total}
