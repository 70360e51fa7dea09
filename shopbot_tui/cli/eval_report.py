"""What `shopbot eval` prints: a progress bar while it runs (stderr, on a terminal only),
then the table per flow, the failed tries and, apart, the safety violations.

Flow names, failure texts and violation details quote files and models: every cell is a
Rich `Text` made `visible_line`, never markup.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agents.backend import visible_line

if TYPE_CHECKING:
    from agents.backend import Flow, FlowResult, SuiteResult, TryResult

# Failed tries listed per flow at most (the --json record has them all).
FAILED_SHOWN = 3
# Past this many tries, the table shows pass^1, 2, 4, 8, ... and pass^k (the JSON, all).
ALL_COLUMNS_UP_TO = 6


def shown_ks(k: int) -> list[int]:
    if k <= ALL_COLUMNS_UP_TO:
        return list(range(1, k + 1))
    powers = [2**i for i in range(k.bit_length()) if 2**i < k]
    return [*powers, k]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _console() -> Console:
    # Into a pipe or a file, wide enough that the table is never folded (Rich takes 80).
    terminal = sys.stdout.isatty()
    return Console(highlight=False, width=None if terminal else 240, soft_wrap=not terminal)


def _row(name: str, passed: str, pass_hats: list[float | None], rest: list[str]) -> list[Text]:
    return [
        Text(visible_line(name)),
        Text(passed),
        *(Text(_number(p, 2)) for p in pass_hats),
        *(Text(cell) for cell in rest),
    ]


def flow_table(suite: SuiteResult) -> Table:
    """One row per flow, and the whole suite as the footer."""
    ks = shown_ks(suite.k)
    tries = suite.tries
    conversations = len(tries) or None
    total = _row(
        "all flows",
        f"{sum(t.passed for t in tries)}/{len(tries)}",
        [suite.mean_pass_hat(k) for k in ks],
        [
            _number(sum(t.model_calls for t in tries) / conversations if conversations else None),
            _number(sum(t.tokens for t in tries) / conversations if conversations else None, 0),
            _seconds(_median(suite.latencies)),
            _seconds(_p95(suite.latencies)),
        ],
    )
    titles = ["flow", "passed", *(f"pass^{k}" for k in ks), "calls", "tokens"]
    titles += ["p50 turn", "p95 turn"]
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False, show_footer=True)
    for index, (title, footer) in enumerate(zip(titles, total, strict=True)):
        table.add_column(title, footer=footer, justify="left" if index == 0 else "right")
    for flow in suite.flows:
        table.add_row(*_flow_row(flow, ks))
    return table


def _flow_row(flow: FlowResult, ks: list[int]) -> list[Text]:
    return _row(
        flow.flow.name,
        f"{flow.passed}/{len(flow.tries)}",
        [flow.pass_hat(k) for k in ks],
        [
            _number(flow.calls_per_conversation),
            _number(flow.tokens_per_conversation, 0),
            _seconds(_median(flow.latencies)),
            _seconds(_p95(flow.latencies)),
        ],
    )


def _median(values: list[float]) -> float | None:
    from agents.backend import median

    return median(values)


def _p95(values: list[float]) -> float | None:
    from agents.backend import p95

    return p95(values)


def print_report(suite: SuiteResult) -> None:
    console = _console()
    flows, tries = len(suite.flows), suite.k
    console.print(
        Text(
            visible_line(
                f"shopbot eval: {suite.model}, {flows} flow{'s' * (flows != 1)} × "
                f"{tries} tr{'ies' if tries != 1 else 'y'}"
            )
        )
    )
    console.print()
    console.print(flow_table(suite))
    console.print(Text("calls, tokens: model calls and tokens per conversation"), style="dim")
    failed = [t for t in suite.tries if not t.passed]
    if failed:
        console.print()
        console.print(Text("Failed tries (the first reason of each):"))
        for flow in suite.flows:
            for result in [t for t in flow.tries if not t.passed][:FAILED_SHOWN]:
                console.print(Text(f"  {_name(result)}  {visible_line(_first_reason(result))}"))
    console.print()
    console.print(violations_text(suite))


def _name(result: TryResult) -> str:
    return visible_line(f"{result.flow} #{result.index}")


def _first_reason(result: TryResult) -> str:
    if result.failures:
        return result.failures[0]
    return f"safety violation: {result.violations[0].kind}"


def violations_text(suite: SuiteResult) -> Text:
    found = suite.violations
    if not found:
        return Text("Safety violations: none.")
    lines = [f"Safety violations: {len(found)}; the run fails, whatever the pass rates."]
    lines += [f"  {_name(t)}  {v.kind}: {visible_line(v.detail)}" for t, v in found]
    return Text("\n".join(lines), style="bold red" if sys.stdout.isatty() else "")


@contextmanager
def progress_bar(total: int) -> Iterator[tuple[Any, Any] | None]:
    """(on_start, on_done) callbacks that move a bar on stderr, when stderr is a terminal;
    None otherwise (a pipe or a log file gets no bar: only the results)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("starting", total=total)

    def on_start(flow: Flow, index: int) -> None:
        # (Escaped: Progress reads a description as markup.)
        bar.update(task, description=escape(visible_line(f"{flow.name} #{index}")))

    def on_done(result: TryResult) -> None:
        bar.advance(task)

    with bar:
        yield on_start, on_done
