"""ShopBot's benchmark suite: `uv run python -m tests.perf [--quick] [--only ...] [--json PATH]`.

Prints one table with each target beside the measured figure (PASS / FAIL; "info" rows have
no target; "N/A" rows could not be measured). Zero-latency models throughout, so the figures
measure our code. Not part of the normal test run (pytest ignores tests/perf).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.perf.common import Progress, Row, fmt, machine, target_text

Section = Callable[[bool, Progress], Awaitable[tuple[list[Row], dict[str, Any]]]]
SECTION_NAMES = ("calls", "latency", "overhead", "postgres", "growth", "tui", "audit", "reads")
# What each section must produce (the smoke test checks these keys).
EXPECTED_KEYS: dict[str, tuple[str, ...]] = {
    "calls": (
        "calls.order_status",
        "calls.refund_approved",
        "calls.refund_rejected",
        "calls.hallucinated_id",
        "calls.handoff_refund_to_orders",
        "calls.angry_complaint",
        "calls.greeting",
        "calls.order_status_sequential",
        "calls.greeting_sequential",
        "calls.suite_total",
        "calls.suite_ratio",
        "calls.suite_ratio_previous",
        "tokens.suite_total",
        "tokens.suite_parts",
        "tokens.per_call_median",
    ),
    "latency": (
        "latency.first_token",
        "latency.first_token_vs_previous",
        "latency.first_token_vs_supervisor",
    ),
    "overhead": (
        "overhead.first",
        "overhead.middle",
        "overhead.late",
        "overhead.bare_ratio_first",
        "overhead.bare_ratio_late",
    ),
    "postgres": (
        "postgres.sqlite_overhead",
        "postgres.overhead",
        "postgres.ratio",
        "postgres.ratio_async_commit",
    ),
    "growth": ("growth.early", "growth.late", "growth.ratio"),
    "tui": ("tui.first_paint", "tui.ready", "tui.max_frame_gap", "tui.keystroke", "tui.drain"),
    "audit": ("audit.open", "audit.filter_worst"),
    "reads": (
        "reads.conversation_list",
        "reads.conversation_list_row_by_row",
        "reads.transcript",
        "reads.audit_viewer_page",
    ),
}


def _load(name: str) -> Section:
    # Imported lazily: `--only calls` should not pay for Textual, nor `--only tui` for the rest.
    if name == "calls":
        from tests.perf import calls

        return calls.measure
    if name == "latency":
        from tests.perf import latency

        return latency.measure
    if name == "overhead":
        from tests.perf import overhead

        return overhead.measure_overhead
    if name == "postgres":
        from tests.perf import postgres

        return postgres.measure
    if name == "growth":
        from tests.perf import overhead

        return overhead.measure_growth
    if name == "tui":
        from tests.perf import tui

        return tui.measure
    if name == "reads":
        from tests.perf import worker_reads

        return worker_reads.measure
    from tests.perf import audit_viewer

    return audit_viewer.measure


def _unavailable(name: str, why: str) -> list[Row]:
    return [
        Row(name, key, key, None, "", note=f"not available: {why}") for key in EXPECTED_KEYS[name]
    ]


async def run_sections(names: list[str], quick: bool, progress: Progress) -> dict[str, Any]:
    results: dict[str, Any] = {"rows": [], "details": {}, "seconds": {}}
    for name in names:
        start = time.perf_counter()
        try:
            section = _load(name)
            rows, detail = await section(quick, progress)
        except ModuleNotFoundError as exc:
            rows, detail = _unavailable(name, f"{exc.name} is missing"), {"error": str(exc)}
        except Exception as exc:
            progress(traceback.format_exc())
            rows = _unavailable(name, f"{type(exc).__name__}: {exc}")
            detail = {"error": traceback.format_exc()}
        results["rows"].extend(rows)
        results["details"][name] = detail
        results["seconds"][name] = round(time.perf_counter() - start, 1)
    return results


def table(rows: list[Row]) -> list[str]:
    lines = [
        "| section | metric | target | measured | result | notes |",
        "|---|---|---:|---:|:---:|---|",
    ]
    for row in rows:
        measured = fmt(row.measured, row.unit)
        if row.samples:
            measured += f" (n={row.samples})"
        lines.append(
            f"| {row.section} | {row.label} | {target_text(row)} | {measured} "
            f"| {row.status} | {row.note} |"
        )
    return lines


def machine_lines(info: dict[str, Any]) -> list[str]:
    packages = ", ".join(f"{k} {v}" for k, v in info["packages"].items())
    return [
        f"Machine: {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, "
        f"{info['platform']}",
        f"Load average at start: {info['loadavg']} (other processes share this machine: "
        "figures are medians over repeats)",
        f"Packages: {packages}",
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats: a fast smoke run")
    parser.add_argument(
        "--only",
        default=",".join(SECTION_NAMES),
        help=f"comma-separated sections to run (default: all of {','.join(SECTION_NAMES)})",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(SECTION_NAMES))
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}; known: {', '.join(SECTION_NAMES)}")
    args.sections = [n for n in SECTION_NAMES if n in names]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Benchmarks must never reach a real provider, whatever the environment says.
    os.environ.pop("MISTRAL_API_KEY", None)

    def progress(line: str) -> None:
        if not args.quiet:
            print(f"[perf] {line}", file=sys.stderr, flush=True)

    info = machine()
    started = time.perf_counter()
    results = asyncio.run(run_sections(args.sections, args.quick, progress))
    info["loadavg_end"] = machine()["loadavg"]
    rows: list[Row] = results["rows"]
    print(f"ShopBot benchmarks{' (quick mode)' if args.quick else ''}")
    print()
    for line in machine_lines(info):
        print(line)
    print()
    for line in table(rows):
        print(line)
    extra = _extra_tables(results["details"])
    if extra:
        print()
        for line in extra:
            print(line)
    elapsed = time.perf_counter() - started
    print()
    print(
        f"{sum(r.status == 'PASS' for r in rows)} passed, "
        f"{sum(r.status == 'FAIL' for r in rows)} failed, "
        f"{sum(r.status == 'N/A' for r in rows)} not available; {elapsed:.0f} s "
        f"(sections: {', '.join(f'{k} {v} s' for k, v in results['seconds'].items())}); "
        f"load average at end: {info['loadavg_end']}"
    )
    if args.json:
        payload = {
            "quick": args.quick,
            "machine": info,
            "rows": [r.to_json() for r in rows],
            "details": results["details"],
            "seconds": results["seconds"],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
        print(f"JSON written to {args.json}")
    return 0


def _extra_tables(details: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    calls = details.get("calls")
    if calls and "error" not in calls:
        from tests.perf.calls import per_scenario_table

        lines.append("Model calls and prompt tokens per scenario (ours / previous / supervisor):")
        lines.append("")
        lines.extend(per_scenario_table(calls))
    return lines
