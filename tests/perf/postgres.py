"""Section `postgres`: our cost per turn with every store in PostgreSQL
(SHOPBOT_DATABASE_URL) beside the home's SQLite file, in the same run, turn for turn.

The same conversation as section 2 (overhead.py: "Where is my order ORD-001?" again and
again, the offline demo model, model time subtracted), played on three engines at once, one
turn each in turn so all see the same load on the machine:

- SQLite: the home's one file (WAL, synchronous=NORMAL), as a newcomer has it;
- PostgreSQL: a throwaway cluster on 127.0.0.1 (tests/support/postgres_cluster.py) with a
  server's defaults for durability (fsync on, every commit flushed to disk before it
  returns): the figure the target is for;
- PostgreSQL with `synchronous_commit = off` for its database (commits return before their
  flush, a crash of the server loses at most the last fraction of a second, never its
  consistency: what SQLite's synchronous=NORMAL trades too), for information.

Without PostgreSQL's server programs (or a cluster that will not start) the rows say so and
carry no figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from tests.perf.common import Progress, Row, TimedDemoModel, spread, temp_home
from tests.perf.overhead import TurnTiming, timed_turn
from tests.support.postgres_cluster import Cluster, server_binaries, start_cluster

RATIO_TARGET = 1.5
KEYS = (
    "postgres.sqlite_overhead",
    "postgres.overhead",
    "postgres.ratio",
    "postgres.ratio_async_commit",
)
# A server's defaults (the test clusters turn durability off to run faster).
DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on"}


@dataclass(frozen=True)
class Plan:
    conversations: int
    turns: int


def plan(quick: bool) -> Plan:
    # Every turn of each conversation counts: first turns, the summaries past 40 messages
    # and the pruning every tenth turn, as a real conversation has them.
    return Plan(conversations=1, turns=20) if quick else Plan(conversations=4, turns=60)


@dataclass
class Store:
    label: str
    engine: ShopBotEngine
    model: TimedDemoModel
    turns: list[TurnTiming] = field(default_factory=list)


def not_available(why: str) -> tuple[list[Row], dict[str, Any]]:
    rows = [Row("postgres", key, key, None, "", note=f"not available: {why}") for key in KEYS]
    return rows, {"error": why}


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    bindir = server_binaries()
    if bindir is None:
        return not_available(
            "PostgreSQL's server programs are not installed (apt-get install postgresql)"
        )
    progress("postgres: starting a throwaway cluster on 127.0.0.1")
    try:
        cluster = start_cluster(bindir, **DURABLE)
    except Exception as exc:  # (any reason it will not start: said in the row)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return not_available(f"the throwaway PostgreSQL cluster did not start ({first})")
    try:
        return await _measure_on(cluster, plan(quick), progress)
    finally:
        cluster.stop()


async def _measure_on(
    cluster: Cluster, the_plan: Plan, progress: Progress
) -> tuple[list[Row], dict[str, Any]]:
    durable = cluster.database()
    relaxed = cluster.database()
    with cluster.admin() as admin:
        admin.execute(f'ALTER DATABASE "{relaxed}" SET synchronous_commit = off')
    with (
        temp_home("pg-sqlite") as sqlite_home,
        temp_home("pg-durable") as durable_home,
        temp_home("pg-relaxed") as relaxed_home,
    ):
        homes: list[tuple[str, Path, str | None]] = [
            ("SQLite", sqlite_home, None),
            ("PostgreSQL", durable_home, cluster.url(durable)),
            ("PostgreSQL, synchronous_commit off", relaxed_home, cluster.url(relaxed)),
        ]
        stores: list[Store] = []
        try:
            for label, home, url in homes:
                model = TimedDemoModel()
                settings = Settings(home=home, force_offline=True, database_url=url)
                engine = ShopBotEngine(settings, model=model)
                await engine.__aenter__()
                stores.append(Store(label, engine, model))
            for store in stores:  # first-use costs out of the way, on a thread of its own
                for turn in range(1, 4):
                    await timed_turn(store.engine, store.model, "warmup", turn)
            for index in range(the_plan.conversations):
                progress(
                    f"postgres: conversation {index + 1}/{the_plan.conversations} "
                    f"({the_plan.turns} turns, on SQLite and PostgreSQL turn for turn)"
                )
                for turn in range(1, the_plan.turns + 1):
                    for store in stores:
                        timing = await timed_turn(store.engine, store.model, f"c{index}", turn)
                        store.turns.append(timing)
        finally:
            for store in stores:
                await store.engine.__aexit__(None, None, None)
    return _rows(stores, the_plan)


def _rows(stores: list[Store], the_plan: Plan) -> tuple[list[Row], dict[str, Any]]:
    sqlite, durable, relaxed = (spread([t.overhead_ms for t in s.turns]) for s in stores)
    cpu = [spread([t.cpu_overhead_ms for t in s.turns])["median"] for s in stores]
    window = f"{the_plan.conversations} × {the_plan.turns} turns, every turn"
    rows = [
        Row(
            "postgres",
            "postgres.sqlite_overhead",
            "overhead per turn, median (SQLite, this run)",
            sqlite["median"],
            "ms",
            samples=int(sqlite["n"]),
            note=(
                f"{window}; p25–p75 {sqlite['p25']:.1f}–{sqlite['p75']:.1f} ms; CPU {cpu[0]:.1f} ms"
            ),
        ),
        Row(
            "postgres",
            "postgres.overhead",
            "overhead per turn, median (PostgreSQL, 127.0.0.1)",
            durable["median"],
            "ms",
            samples=int(durable["n"]),
            note=(
                f"{window}; p25–p75 {durable['p25']:.1f}–{durable['p75']:.1f} ms; CPU "
                f"{cpu[1]:.1f} ms; fsync on, each commit flushed"
            ),
        ),
        Row(
            "postgres",
            "postgres.ratio",
            "overhead per turn: PostgreSQL / SQLite",
            durable["median"] / sqlite["median"],
            "x",
            target=RATIO_TARGET,
            samples=int(durable["n"]),
            note=f"{durable['median']:.1f} vs {sqlite['median']:.1f} ms, same run, turn for turn",
        ),
        Row(
            "postgres",
            "postgres.ratio_async_commit",
            "overhead per turn: PostgreSQL with synchronous_commit off / SQLite",
            relaxed["median"] / sqlite["median"],
            "x",
            samples=int(relaxed["n"]),
            note=(
                f"{relaxed['median']:.1f} vs {sqlite['median']:.1f} ms; what SQLite's "
                "synchronous=NORMAL trades too: a crash may lose the last commits, never "
                "consistency"
            ),
        ),
    ]
    detail = {
        "plan": the_plan.__dict__,
        "stores": {s.label: spread([t.overhead_ms for t in s.turns]) for s in stores},
    }
    return rows, detail
