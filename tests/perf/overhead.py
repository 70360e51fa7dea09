"""Sections 2 and 3: our own cost per turn (model time excluded) and checkpoint growth.

One long conversation is the customer asking "Where is my order ORD-001?" again and again
(customer Alex) with the offline demo model: three model calls per turn (lookup, extraction,
answer) plus a summary call whenever the history passes 40 messages, so the figures include
the summarisation that keeps history bounded.

Overhead = wall time of `engine.send(...)` minus the time spent inside the model's
`_agenerate` / `_astream` (see `TimedDemoModel`): graph, checkpoints, audit log, thread
registry and LangChain's call plumbing all count as ours.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.audit.log import AuditQuery
from agents.facade import ShopBotEngine
from agents.runner.engine import PRUNE_EVERY
from agents.settings import Settings
from tests.perf.common import Progress, Row, TimedDemoModel, spread, temp_home

QUESTION = "Where is my order ORD-001?"
CUSTOMER = "Alex"
TURN_1_TARGET_MS = 15.0
TURN_200_TARGET_MS = 25.0
GROWTH_RATIO_TARGET = 1.5
FULL_TURNS = 200
QUICK_TURNS = 30


@dataclass
class TurnTiming:
    turn: int
    wall_ms: float
    overhead_ms: float  # wall minus time inside _agenerate/_astream
    strict_overhead_ms: float  # wall minus time in the rule engine only
    model_calls: int
    # CPU time of the whole process (all threads) minus the model's time: what the turn
    # costs when it has a core to itself; wall minus this is mostly waiting for a core.
    cpu_overhead_ms: float = 0.0


@dataclass
class Conversation:
    turns: list[TurnTiming] = field(default_factory=list)

    def window(self, first: int, last: int) -> list[TurnTiming]:
        return [t for t in self.turns if first <= t.turn <= last]


async def timed_turn(
    engine: ShopBotEngine, model: TimedDemoModel, thread: str, turn: int
) -> TurnTiming:
    model.clock.reset()
    cpu_start = time.process_time()
    start = time.perf_counter()
    result = await engine.send(thread, QUESTION, customer=CUSTOMER)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    if result.status != "done":
        raise AssertionError(f"turn {turn} of {thread} ended {result.status}: {result.error}")
    clock = model.clock
    return TurnTiming(
        turn=turn,
        wall_ms=wall * 1000,
        overhead_ms=(wall - clock.inside) * 1000,
        strict_overhead_ms=(wall - clock.answering) * 1000,
        model_calls=clock.calls,
        cpu_overhead_ms=(cpu - clock.inside) * 1000,
    )


def _engine(home: Path, model: TimedDemoModel) -> ShopBotEngine:
    return ShopBotEngine(Settings(home=home, force_offline=True), model=model)


# --- section 2 ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OverheadPlan:
    conversations: int
    turns: int
    first_turn_threads: int
    # (key, label, first turn, last turn, target)
    points: tuple[tuple[str, str, int, int, float | None], ...]


def overhead_plan(quick: bool) -> OverheadPlan:
    """Full: 5 conversations of 200 turns, windows of 10 turns. Quick (a smoke run): one
    conversation of 30 turns, so its late point is turn 30, not 200 (labelled as such)."""
    if quick:
        return OverheadPlan(
            conversations=1,
            turns=QUICK_TURNS,
            first_turn_threads=3,
            points=(
                ("first", "turn 1", 1, 1, TURN_1_TARGET_MS),
                ("middle", "turn 20", 18, 22, None),
                (
                    "late",
                    f"turn {QUICK_TURNS} (quick)",
                    QUICK_TURNS - 4,
                    QUICK_TURNS,
                    TURN_200_TARGET_MS,
                ),
            ),
        )
    return OverheadPlan(
        conversations=5,
        turns=FULL_TURNS,
        first_turn_threads=20,
        points=(
            ("first", "turn 1", 1, 1, TURN_1_TARGET_MS),
            ("middle", "turn 50", 46, 55, None),
            ("late", "turn 200", 191, 200, TURN_200_TARGET_MS),
        ),
    )


async def measure_overhead(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    plan = overhead_plan(quick)
    conversations: list[Conversation] = []
    first_turns: list[TurnTiming] = []
    cold: TurnTiming | None = None
    with temp_home("overhead-warm") as home:
        model = TimedDemoModel()
        async with _engine(home, model) as engine:
            # The process's very first turn pays for lazy imports and first-use caches.
            cold = await timed_turn(engine, model, "warmup", 1)
            for turn in range(2, 4):
                await timed_turn(engine, model, "warmup", turn)
            for n in range(plan.first_turn_threads):
                first_turns.append(await timed_turn(engine, model, f"first-{n}", 1))
    for index in range(plan.conversations):
        progress(f"overhead: conversation {index + 1}/{plan.conversations} ({plan.turns} turns)")
        conversation = Conversation()
        with temp_home("overhead") as home:
            model = TimedDemoModel()
            async with _engine(home, model) as engine:
                for turn in range(1, plan.turns + 1):
                    conversation.turns.append(await timed_turn(engine, model, "long", turn))
        conversations.append(conversation)

    rows: list[Row] = []
    detail: dict[str, Any] = {"plan": plan.__dict__, "points": {}}
    for key, label, first, last, target in plan.points:
        samples = [t for c in conversations for t in c.window(first, last)]
        if first == 1:
            samples += first_turns
        stats = spread([t.overhead_ms for t in samples])
        strict = spread([t.strict_overhead_ms for t in samples])
        wall = spread([t.wall_ms for t in samples])
        cpu = spread([t.cpu_overhead_ms for t in samples])
        window = f"turns {first}–{last}" if first != last else "first turns of fresh threads"
        rows.append(
            Row(
                "overhead",
                f"overhead.{key}",
                f"overhead per turn, median @ {label}",
                stats["median"],
                "ms",
                target=target,
                samples=int(stats["n"]),
                note=(
                    f"{window}; p25–p75 {stats['p25']:.1f}–{stats['p75']:.1f} ms; "
                    f"CPU {cpu['median']:.1f} ms; wall incl. model {wall['median']:.1f} ms"
                ),
                extra={"overhead": stats, "strict_overhead": strict, "wall": wall, "cpu": cpu},
            )
        )
        detail["points"][label] = {"overhead": stats, "strict": strict, "wall": wall, "cpu": cpu}
    if cold is not None:
        rows.append(
            Row(
                "overhead",
                "overhead.cold_first_turn",
                "first turn in a fresh process (cold)",
                cold.overhead_ms,
                "ms",
                samples=1,
                note="lazy imports and first-use caches; not a target",
            )
        )
    detail["per_turn_median"] = _per_turn_medians(conversations)
    return rows, detail


def _per_turn_medians(conversations: list[Conversation]) -> list[float]:
    by_turn: dict[int, list[float]] = {}
    for conversation in conversations:
        for t in conversation.turns:
            by_turn.setdefault(t.turn, []).append(t.overhead_ms)
    return [round(spread(v)["median"], 2) for _, v in sorted(by_turn.items())]


# --- section 3 ----------------------------------------------------------------------------


def file_bytes(home: Path, names: tuple[str, ...]) -> int:
    """Bytes of the SQLite files after folding their WAL into the main file.

    `wal_checkpoint(TRUNCATE)` moves every committed page into the database file and empties
    the WAL, so the main file's size is what the data really occupies (in whole pages).
    """
    total = 0
    for name in names:
        path = home / name
        with sqlite3.connect(path) as conn:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                raise AssertionError(f"could not checkpoint {name}: a reader is active")
        conn.close()
        total += path.stat().st_size
        wal = path.with_name(name + "-wal")
        if wal.exists():
            total += wal.stat().st_size
    return total


def row_bytes(checkpoints: Path) -> int:
    """Bytes of checkpoint data stored in rows (blobs and keys): the logical size."""
    with sqlite3.connect(checkpoints) as conn:
        ckpt = conn.execute(
            "SELECT coalesce(sum(length(checkpoint) + length(metadata) + length(thread_id) "
            "+ length(checkpoint_ns) + length(checkpoint_id)), 0) FROM checkpoints"
        ).fetchone()[0]
        writes = conn.execute(
            "SELECT coalesce(sum(length(value) + length(channel) + length(task_id) "
            "+ length(thread_id) + length(checkpoint_ns) + length(checkpoint_id)), 0) FROM writes"
        ).fetchone()[0]
    conn.close()
    return int(ckpt) + int(writes)


# One database holds everything: the checkpoints' share of it is their rows' bytes.
DATABASE_FILES = ("shopbot.sqlite",)


async def measure_growth(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    """Average growth per turn over the first ten turns and the last ten (to turn 200, or 30
    in quick mode).

    Ten turns are one pruning cycle (`PRUNE_EVERY`): each window ends on the turn that drops
    the thread's superseded checkpoints, so both see the same mix of growth and reuse.
    """
    turns = QUICK_TURNS if quick else FULL_TURNS
    windows = {
        "early": ("turn 10", 1, PRUNE_EVERY),
        "late": (f"turn {turns}", turns - PRUNE_EVERY + 1, turns),
    }
    measure_after = {w[1] - 1 for w in windows.values()} | {w[2] for w in windows.values()}
    sizes: dict[int, dict[str, int]] = {}
    summaries = 0
    progress(f"growth: one conversation of {turns} turns")
    with temp_home("growth") as home:
        model = TimedDemoModel()
        async with _engine(home, model) as engine:
            for turn in range(turns + 1):
                if turn:
                    await timed_turn(engine, model, "long", turn)
                if turn in measure_after:
                    # The audit writer stores a turn's events on its own thread: a batch being
                    # written holds the log's lock, and the checkpoint below would be refused.
                    engine._recorder.flush()
                    sizes[turn] = {
                        "all_files": file_bytes(home, DATABASE_FILES),
                        "checkpoint_rows": row_bytes(home / "shopbot.sqlite"),
                    }
            summaries = engine.audit.count(AuditQuery(kinds=("summarised",)))
    rows: list[Row] = []
    growth: dict[str, dict[str, float]] = {}
    for key, (label, first, last) in windows.items():
        span = last - first + 1
        figures = {
            name: (sizes[last][name] - sizes[first - 1][name]) / span for name in sizes[last]
        }
        growth[key] = figures
        rows.append(
            Row(
                "growth",
                f"growth.{key}",
                f"checkpoint growth per turn @ {label}",
                figures["checkpoint_rows"],
                "bytes/turn",
                note=(
                    f"mean over turns {first}–{last}, checkpoint rows' bytes; the database "
                    f"file {figures['all_files']:,.0f} B/turn"
                ),
                extra=figures,
            )
        )
    early, late = growth["early"], growth["late"]
    late_label = windows["late"][0]
    rows.append(
        Row(
            "growth",
            "growth.ratio",
            f"checkpoint growth ratio {late_label} / turn 10",
            late["checkpoint_rows"] / early["checkpoint_rows"],
            "x",
            target=GROWTH_RATIO_TARGET,
            note=(
                f"stored rows {sizes[PRUNE_EVERY]['checkpoint_rows']:,} B after turn "
                f"{PRUNE_EVERY}, {sizes[turns]['checkpoint_rows']:,} B after turn {turns} "
                f"(pruned every {PRUNE_EVERY} turns); {summaries} summaries"
            ),
        )
    )
    last_size = sizes[turns]
    rows.append(
        Row(
            "growth",
            "growth.total",
            f"checkpoints after {turns} turns",
            last_size["checkpoint_rows"] / 1e6,
            "MB",
            note=(
                f"the whole database {last_size['all_files'] / 1e6:.1f} MB "
                f"({last_size['all_files'] / turns:,.0f} B/turn on average; the audit log's "
                "FTS index grows in lumps as segments merge)"
            ),
        )
    )
    return rows, {"sizes": sizes, "growth": growth, "summaries": summaries}
