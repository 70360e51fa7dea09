"""Section 6: reads in a worker thread while the event loop is busy.

The app reads the conversation list, a transcript and the audit viewer's pages in worker
threads, often while the event loop builds or paints a screen (a reply streaming). Python's
`sqlite3` lets go of the GIL at every row it steps to, and the worker then waits up to the
switch interval (5 ms) to get it back from a thread that keeps it busy. ShopBot's reads fetch
their rows packed into one (`sqlite_store.fetch_packed`); the same query read row by row is
measured beside them. Here the main thread runs Python in a loop while a worker reads (busy);
the same read with the main thread waiting is the floor (idle).
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.audit.log import AuditLog
from agents.store.threads import ThreadRegistry
from tests.perf.audit_viewer import build_log
from tests.perf.common import Progress, Row, temp_home


@dataclass(frozen=True)
class Sizes:
    conversations: int = 300
    listed: int = 200
    transcript_lines: int = 600
    events: int = 20_000
    page: int = 200
    repeats: int = 9
    row_by_row_repeats: int = 3  # the reference: seconds a read when busy


# A smoke run: the rows, not the figures (a row by row read still takes ~5 ms a row).
QUICK = Sizes(conversations=60, listed=40, transcript_lines=100, events=2_000, repeats=1)


def _spin() -> None:
    sum(range(2_000))  # Python work, as a render pass is


def timed_read(read: Callable[[], object], *, busy: bool) -> float:
    """Milliseconds `read` takes in a worker thread, the main thread busy or waiting."""
    done = threading.Event()
    took: list[float] = []

    def work() -> None:
        start = time.perf_counter()
        read()
        took.append((time.perf_counter() - start) * 1000)
        done.set()

    worker = threading.Thread(target=work, name="perf-read")
    worker.start()
    if busy:
        while not done.is_set():
            _spin()
    worker.join()
    return took[0]


def _registry(home: Path, sizes: Sizes) -> ThreadRegistry:
    registry = ThreadRegistry(home / "threads.sqlite")
    for n in range(sizes.conversations):
        registry.open_turn(f"t-{n:04d}", customer="Alex", message=f"Where is ORD-00{n % 7 + 1}?")
    for n in range(sizes.transcript_lines - 1):
        registry.append_line("t-0000", "assistant" if n % 2 else "customer", f"line {n} " * 8)
    return registry


def _row_by_row(store: ThreadRegistry | AuditLog, sql: str, params: tuple[Any, ...]) -> object:
    with store._lock:  # as the store reads, but each row stepped to on its own
        return store._conn.execute(sql, params).fetchall()


def _cases(
    registry: ThreadRegistry, audit: AuditLog, sizes: Sizes
) -> dict[str, Callable[[], object]]:
    listed, page = sizes.listed, sizes.page
    return {
        f"conversation list ({listed} of {sizes.conversations})": lambda: registry.list(listed),
        "conversation list, row by row": lambda: _row_by_row(
            registry, "SELECT * FROM threads ORDER BY touched DESC LIMIT ?", (listed,)
        ),
        f"transcript ({sizes.transcript_lines} lines)": lambda: registry.lines("t-0000"),
        "transcript, row by row": lambda: _row_by_row(
            registry, "SELECT * FROM lines WHERE thread_id = ? ORDER BY id", ("t-0000",)
        ),
        f"audit viewer page ({page} events)": lambda: audit.page(limit=page),
        "audit viewer page, row by row": lambda: _row_by_row(
            audit, "SELECT * FROM events ORDER BY id DESC LIMIT ?", (page,)
        ),
    }


def _measure(home: Path, sizes: Sizes) -> dict[str, dict[str, list[float]]]:
    build_log(home / "audit.sqlite", sizes.events)
    results: dict[str, dict[str, list[float]]] = {}
    with _registry(home, sizes) as registry, AuditLog(home / "audit.sqlite") as audit:
        cases = _cases(registry, audit, sizes)
        for repeat in range(sizes.repeats):
            for name, read in cases.items():
                if "row by row" in name and repeat >= sizes.row_by_row_repeats:
                    continue
                for busy in (False, True):
                    took = timed_read(read, busy=busy)
                    results.setdefault(name, {}).setdefault("busy" if busy else "idle", []).append(
                        took
                    )
    return results


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    sizes = QUICK if quick else Sizes()
    progress(f"reads: worker reads with the event loop busy and idle ({sizes.repeats} repeats)")
    with temp_home("reads") as home:
        results = await asyncio.to_thread(_measure, home, sizes)
    rows: list[Row] = []
    for name, by_state in results.items():
        busy, idle = (statistics.median(by_state[state]) for state in ("busy", "idle"))
        key = "reads." + name.split(" (")[0].split(",")[0].replace(" ", "_")
        key += "_row_by_row" if "row by row" in name else ""
        rows.append(
            Row(
                "reads",
                key,
                f"read in a worker, event loop busy: {name}",
                busy,
                "ms",
                samples=len(by_state["busy"]),
                note=f"event loop idle: {idle:.1f} ms; max busy {max(by_state['busy']):.0f} ms",
            )
        )
    return rows, {"reads_ms": results}
