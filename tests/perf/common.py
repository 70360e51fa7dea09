"""Shared pieces of the benchmark suite: result rows, statistics, the machine, timed models."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from agents.models.offline.demo_model import OfflineDemoModel
from agents.models.streaming import wants_stream

Compare = Literal["<=", ">="]


@dataclass
class Row:
    """One line of the table: a measured figure and, when there is one, its target."""

    section: str
    key: str
    label: str
    measured: float | None
    unit: str
    target: float | None = None
    compare: Compare = "<="
    note: str = ""
    samples: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if self.measured is None:
            return "N/A"
        if self.target is None:
            return "info"
        ok = self.measured <= self.target if self.compare == "<=" else self.measured >= self.target
        return "PASS" if ok else "FAIL"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status
        return out


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in ("calls", "tokens", "events", "B", "bytes/turn", "frames"):
        return f"{value:,.0f} {unit}"
    if unit == "x":
        return f"{value:.3f}×"
    if unit == "s":
        return f"{value:.3f} s"
    return f"{value:,.1f} {unit}"


def target_text(row: Row) -> str:
    if row.target is None:
        return ""
    return f"{row.compare} {fmt(row.target, row.unit)}"


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, quartiles, min and max: what a noisy 2-core machine needs to be read honestly."""
    ordered = sorted(values)
    if not ordered:
        return {}
    n = len(ordered)

    def pick(q: float) -> float:
        return float(ordered[min(n - 1, max(0, round(q * (n - 1))))])

    return {
        "n": n,
        "median": median(ordered),
        "p25": pick(0.25),
        "p75": pick(0.75),
        "p90": pick(0.90),
        "min": float(ordered[0]),
        "max": float(ordered[-1]),
    }


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "loadavg": load,
        "packages": {
            name: package_version(name)
            for name in (
                "langgraph",
                "langchain-core",
                "langgraph-checkpoint-sqlite",
                "textual",
                "aiosqlite",
            )
        },
    }


@contextmanager
def temp_home(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"shopbot-perf-{prefix}-") as folder:
        yield Path(folder)


class ModelClock:
    """Time spent inside model calls, to subtract from a turn's wall time."""

    def __init__(self) -> None:
        self.inside = 0.0  # in _agenerate / _astream (the brief's definition)
        self.answering = 0.0  # in the rule engine only (`answer`): the stricter split
        self.calls = 0

    def reset(self) -> None:
        self.inside = self.answering = 0.0
        self.calls = 0


class TimedDemoModel(OfflineDemoModel):
    """The offline demo model, with a stopwatch around everything it does itself.

    `clock.inside` sums the time spent inside `_agenerate` / `_astream` (each `__anext__`
    of the stream, so time the caller spends between chunks is not counted); a real
    provider's latency would replace exactly this part. `clock.answering` sums only the
    rule engine (`answer`), a stricter split that counts LangChain's chunk plumbing as ours.
    """

    _clock: ModelClock = PrivateAttr(default_factory=ModelClock)

    @property
    def clock(self) -> ModelClock:
        return self._clock

    def answer(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], tool_choice: Any
    ) -> AIMessage:
        start = time.perf_counter()
        try:
            return super().answer(messages, tools, tool_choice)
        finally:
            self._clock.answering += time.perf_counter() - start

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if wants_stream(run_manager):
            # A streamed reply: `_astream` below times the model's part, and the folding
            # of its chunks around it is ours.
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        start = time.perf_counter()
        self._clock.calls += 1
        try:
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        finally:
            self._clock.inside += time.perf_counter() - start

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        self._clock.calls += 1
        inner = super()._astream(messages, stop, run_manager, **kwargs)
        while True:
            start = time.perf_counter()
            try:
                chunk = await anext(inner)
            except StopAsyncIteration:
                self._clock.inside += time.perf_counter() - start
                return
            self._clock.inside += time.perf_counter() - start
            yield chunk


Progress = Callable[[str], None]


def quiet(_: str) -> None:
    """A progress sink that says nothing."""
