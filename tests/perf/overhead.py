"""Sections 2 and 3: our own cost per turn (model time excluded), beside a bare LangGraph
graph of the same shape (bare_graph.py), and checkpoint growth.

One long conversation is the customer asking "Where is my order ORD-001?" again and again
(customer Alex) with the offline demo model: two model calls per turn (the lookup, the
answer) plus a summary call whenever the history passes 40 messages, so the figures include
the summarisation that keeps history bounded. The bare graph gets the same messages, turn
for turn, interleaved with ours so both see the same load on the machine.

Overhead = wall time of `engine.send(...)` minus the time spent inside the model's
`_agenerate` / `_astream` (see `TimedDemoModel`): graph, checkpoints, audit log, thread
registry and LangChain's call plumbing all count as ours. The bare graph's is measured the
same way (its `ainvoke` minus the model's time).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.audit.log import AuditQuery
from agents.runner.engine import PRUNE_EVERY, ShopBotEngine
from agents.settings import Settings
from tests.perf.bare_graph import BareRunner, bare_runner
from tests.perf.common import Progress, Row, TimedDemoModel, spread, temp_home

QUESTION = "Where is my order ORD-001?"
CUSTOMER = "Alex"
# Ours against the bare graph of the same shape, model time excluded from both.
BARE_RATIO_TARGET = 1.5
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
    # (key, label, first turn, last turn, ours / bare: "target", "info" or "" for no row)
    points: tuple[tuple[str, str, int, int, str], ...]


def overhead_plan(quick: bool) -> OverheadPlan:
    """Full: 5 conversations of 200 turns, windows of 10 turns. Quick (a smoke run): one
    conversation of 30 turns, so its late point is turn 30, not 200 (labelled as such)."""
    if quick:
        return OverheadPlan(
            conversations=1,
            turns=QUICK_TURNS,
            first_turn_threads=3,
            points=(
                ("first", "turn 1", 1, 1, "target"),
                ("middle", "turn 20", 18, 22, ""),
                ("late", f"turn {QUICK_TURNS} (quick)", QUICK_TURNS - 4, QUICK_TURNS, "info"),
            ),
        )
    return OverheadPlan(
        conversations=5,
        turns=FULL_TURNS,
        first_turn_threads=20,
        points=(
            ("first", "turn 1", 1, 1, "target"),
            ("middle", "turn 50", 46, 55, ""),
            ("late", "turn 200", 191, 200, "info"),
        ),
    )


async def bare_turn(runner: BareRunner, thread: str, turn: int) -> TurnTiming:
    cpu_start = time.process_time()
    wall, inside, calls = await runner.turn(thread, QUESTION)
    cpu = time.process_time() - cpu_start
    return TurnTiming(
        turn=turn,
        wall_ms=wall * 1000,
        overhead_ms=(wall - inside) * 1000,
        strict_overhead_ms=(wall - runner.model.clock.answering) * 1000,
        model_calls=calls,
        cpu_overhead_ms=(cpu - inside) * 1000,
    )


@dataclass
class Pair:
    """Ours and the bare graph, turn for turn."""

    ours: Conversation = field(default_factory=Conversation)
    bare: Conversation = field(default_factory=Conversation)

    async def turn(
        self, engine: ShopBotEngine, model: TimedDemoModel, runner: BareRunner, thread: str, n: int
    ) -> None:
        self.ours.turns.append(await timed_turn(engine, model, thread, n))
        self.bare.turns.append(await bare_turn(runner, thread, n))


async def measure_overhead(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    plan = overhead_plan(quick)
    pairs: list[Pair] = []
    first_turns = Pair()
    cold: TurnTiming | None = None
    with temp_home("overhead-warm") as home, temp_home("overhead-warm-bare") as bare_home:
        model = TimedDemoModel()
        async with _engine(home, model) as engine, bare_runner(bare_home) as runner:
            # The process's very first turn pays for lazy imports and first-use caches.
            cold = await timed_turn(engine, model, "warmup", 1)
            warmup = Pair()
            for turn in range(1, 4):
                await warmup.turn(engine, model, runner, "warmup-both", turn)
            for n in range(plan.first_turn_threads):
                await first_turns.turn(engine, model, runner, f"first-{n}", 1)
    for index in range(plan.conversations):
        progress(
            f"overhead: conversation {index + 1}/{plan.conversations} ({plan.turns} turns, "
            "ours and the bare graph)"
        )
        pair = Pair()
        with temp_home("overhead") as home, temp_home("overhead-bare") as bare_home:
            model = TimedDemoModel()
            async with _engine(home, model) as engine, bare_runner(bare_home) as runner:
                for turn in range(1, plan.turns + 1):
                    await pair.turn(engine, model, runner, "long", turn)
        pairs.append(pair)

    rows: list[Row] = []
    detail: dict[str, Any] = {"plan": plan.__dict__, "points": {}}
    for key, label, first, last, ratio in plan.points:
        ours_samples = [t for p in pairs for t in p.ours.window(first, last)]
        bare_samples = [t for p in pairs for t in p.bare.window(first, last)]
        if first == 1:
            ours_samples += first_turns.ours.turns
            bare_samples += first_turns.bare.turns
        stats = spread([t.overhead_ms for t in ours_samples])
        bare = spread([t.overhead_ms for t in bare_samples])
        strict = spread([t.strict_overhead_ms for t in ours_samples])
        wall = spread([t.wall_ms for t in ours_samples])
        cpu = spread([t.cpu_overhead_ms for t in ours_samples])
        bare_cpu = spread([t.cpu_overhead_ms for t in bare_samples])
        calls = spread([t.model_calls for t in ours_samples])
        bare_calls = spread([t.model_calls for t in bare_samples])
        window = f"turns {first}–{last}" if first != last else "first turns of fresh threads"
        rows.append(
            Row(
                "overhead",
                f"overhead.{key}",
                f"overhead per turn, median @ {label} (ours)",
                stats["median"],
                "ms",
                samples=int(stats["n"]),
                note=(
                    f"{window}; p25–p75 {stats['p25']:.1f}–{stats['p75']:.1f} ms; "
                    f"CPU {cpu['median']:.1f} ms; wall incl. model {wall['median']:.1f} ms; "
                    f"the bare graph {bare['median']:.1f} ms (CPU {bare_cpu['median']:.1f} ms)"
                ),
                extra={
                    "overhead": stats,
                    "strict_overhead": strict,
                    "wall": wall,
                    "cpu": cpu,
                    "bare": bare,
                    "bare_cpu": bare_cpu,
                },
            )
        )
        if ratio:
            # Later in a conversation the bare graph keeps every message (no summary, no
            # pruning) and grows with it; ours stays flat: a floor only on a fresh thread.
            grows = (
                ""
                if ratio == "target"
                else "; the bare graph keeps every message, its cost grows with them"
            )
            rows.append(
                Row(
                    "overhead",
                    f"overhead.bare_ratio_{key}",
                    f"overhead per turn @ {label}: ours / bare LangGraph graph",
                    stats["median"] / bare["median"],
                    "x",
                    target=BARE_RATIO_TARGET if ratio == "target" else None,
                    samples=int(stats["n"]),
                    note=(
                        f"{stats['median']:.1f} vs {bare['median']:.1f} ms; model calls a turn "
                        f"{calls['median']:.0f} vs {bare_calls['median']:.0f}; CPU "
                        f"{cpu['median']:.1f} vs {bare_cpu['median']:.1f} ms{grows}"
                    ),
                )
            )
        detail["points"][label] = {
            "overhead": stats,
            "strict": strict,
            "wall": wall,
            "cpu": cpu,
            "bare": bare,
            "bare_cpu": bare_cpu,
        }
    points = [detail["points"][label]["overhead"]["median"] for _, label, *_ in plan.points]
    rows.append(
        Row(
            "overhead",
            "overhead.late_over_first",
            f"overhead per turn, {plan.points[-1][1]} / turn 1 (ours)",
            points[-1] / points[0],
            "x",
            note="whether our cost grows with the conversation (summaries keep it bounded)",
        )
    )
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
    detail["per_turn_median"] = _per_turn_medians([p.ours for p in pairs])
    detail["bare_per_turn_median"] = _per_turn_medians([p.bare for p in pairs])
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
