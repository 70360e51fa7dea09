"""Section 4: the TUI. Start-up (first paint, ready) from process start, in a subprocess; then,
in this process, the largest gap between frames while a 4,000-token reply streams at 500
tokens/s, and keystroke-to-screen latency while it streams.

The streaming model is the offline demo model answering every customer message with one long
Markdown reply, streamed one word-piece ("token") at a time on a fixed 2 ms schedule (a
late loop gets the overdue tokens in a burst, as from a network buffer). By the chars/4
estimate those 4,000 pieces are about 5,000 tokens: the test is on the heavy side.

Keystrokes are sent the way Textual's terminal driver sends them (a Key message posted
from another thread) every 150 ms while the reply streams; the latency runs until the first
frame painted with the Input's new value.

Frame gaps are measured from the first token until the reply is fully on screen (the turn
has ended in the UI): a UI that falls behind keeps "streaming" after the model has finished,
and that backlog is reported too ("drain").
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import PrivateAttr
from textual import events

from agents.backend.local import LocalBackend
from agents.models.offline.demo_model import OfflineDemoModel
from agents.models.offline.local_model import estimate_tokens
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from tests.perf.common import Progress, Row, spread, temp_home
from tests.perf.textual_support import FrameClock, LoopLag, install_frame_clock, wait_until

# ShopBot's first paint may cost at most this much more than a bare Textual app's.
FIRST_PAINT_OVER_BARE_S = 0.1
MAX_GAP_TARGET_MS = 50.0
TOKENS_PER_SECOND = 500
TERMINAL = (120, 40)
KEY_INTERVAL_S = 0.15
TURN_END_LIMIT_S = 300.0
_FILLER = (
    "Your order left our warehouse this morning and the courier expects to deliver it "
    "within two business days, so there is nothing you need to do right now while it "
    "travels to the address on your account"
)


def long_reply(pieces: int) -> str:
    """Deterministic Markdown (headings, paragraphs, lists) of exactly `pieces` word-pieces."""
    words = _FILLER.split()
    blocks: list[str] = []
    section = 0
    while sum(len(_pieces(b)) for b in blocks) < pieces:
        section += 1
        paragraph = " ".join(words[n % len(words)] for n in range(60))
        items = "\n".join(f"- {' '.join(words[i * 5 : i * 5 + 7])}" for i in range(3))
        blocks.append(f"### Update {section}\n\n{paragraph}.\n\n{items}\n\n")
    return "".join(_pieces("".join(blocks))[:pieces])


class StreamingReplyModel(OfflineDemoModel):
    """Answers every customer message with `reply`, streamed at `rate` pieces per second."""

    reply: str = ""
    rate: float = TOKENS_PER_SECOND
    _marks: dict[str, float] = PrivateAttr(default_factory=dict)

    @property
    def marks(self) -> dict[str, float]:
        return self._marks

    def answer(self, messages: Any, tools: Any, tool_choice: Any) -> AIMessage:
        if tool_choice == "any":
            return super().answer(messages, tools, tool_choice)
        return AIMessage(content=self.reply)

    async def _pace(self, index: int) -> None:
        # A fixed schedule, not a fixed delay: a late loop gets the overdue pieces in a burst.
        now = time.perf_counter()
        if index == 0:
            self._marks["first_token"] = now
        delay = self._marks["first_token"] + index / self.rate - now
        if delay > 0:
            await asyncio.sleep(delay)
        self._marks["pieces"] = index + 1

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
        self._marks["last_token"] = time.perf_counter()


def stuck_state(app: Any) -> str:
    """What the app looks like when a turn never ends on screen (for the error message)."""
    workers = ", ".join(f"{w.name or w.group}: {w.state.name}" for w in app.workers)
    return (
        f"app running={app.is_running}, busy={sorted(app.chat.busy)}, "
        f"screens={[type(s).__name__ for s in app.screen_stack]}, workers=[{workers}]"
    )


def _pieces(text: str) -> list[str]:
    from agents.models.offline.local_model import _WORDS

    return list(_WORDS.findall(text))


# --- start-up -----------------------------------------------------------------------------


@functools.cache
def precompile() -> None:
    """Byte-compile the project and its dependencies as a normal first run would. Where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it), every start would otherwise
    recompile every module it imports, Textual's included (and `uv sync` compiles nothing
    unless asked), which no installed copy of ShopBot does. Once per process: after the
    first time it only checks the files' dates."""
    import compileall
    import sysconfig

    root = Path(__file__).resolve().parents[2]
    for package in ("agents", "gates", "shopbot_tui", "tests"):
        compileall.compile_dir(root / package, quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=1, workers=0)


def startup_once(home: Path, *, bare: bool = False) -> dict[str, float]:
    precompile()
    out = home / "startup.json"
    t0 = time.monotonic()
    mode = ["bare"] if bare else []
    subprocess.run(
        [sys.executable, "-m", "tests.perf.tui_startup", repr(t0), str(home), str(out), *mode],
        check=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    result: dict[str, float] = json.loads(out.read_text(encoding="utf-8"))
    return result


# --- streaming ----------------------------------------------------------------------------


class Typist:
    """Presses a key every `interval` seconds from its own thread, like a terminal's reader."""

    def __init__(self, app: Any, interval: float) -> None:
        self.app = app
        self.interval = interval
        self.sent: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="typist", daemon=True)

    def _run(self) -> None:
        driver = self.app._driver
        while not self._stop.wait(self.interval):
            key = events.Key("x", "x")
            self.sent.append(time.perf_counter())
            driver.send_message(key)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


async def stream_once(pieces: int) -> dict[str, Any]:
    from shopbot_tui.app import ShopBotApp
    from shopbot_tui.collector import pause_for_start_up

    # As `shopbot` starts (launch.py): the app sets aside what is alive once its engine is up.
    pause_for_start_up()

    with temp_home("tui-stream") as home:
        settings = Settings(home=home, force_offline=True)
        model = StreamingReplyModel(reply=long_reply(pieces))
        app = ShopBotApp(
            settings,
            customer="Alex",
            backend_factory=lambda: LocalBackend(
                settings, via="app", engine_factory=lambda: ShopBotEngine(settings, model=model)
            ),
        )
        clock = install_frame_clock(app)
        lag = LoopLag()
        seen: list[tuple[float, float]] = []  # (sent, shown) per keystroke
        typed = 0
        async with app.run_test(headless=False, size=TERMINAL) as pilot:
            await wait_until(lambda: getattr(app.chat, "thread_ready", False), 60, "ready")
            box = app.chat.message_input
            box.focus()
            box.value = "Where is my order ORD-001?"
            # Not `pilot.press`: it waits for the app to go idle, which it does not while a
            # reply streams. The driver's way: post the key and carry on.
            driver = app._driver
            assert driver is not None
            driver.send_message(events.Key("enter", None))
            await wait_until(lambda: box.value == "", 10, "the message to be accepted")
            typist = Typist(app, KEY_INTERVAL_S)

            def on_frame(now: float) -> None:
                nonlocal typed
                shown = len(box.value)
                while typed < shown and typed < len(typist.sent):
                    seen.append((typist.sent[typed], now))
                    typed += 1

            clock.listeners.append(on_frame)
            await wait_until(lambda: "first_token" in model.marks, 30, "the first token")
            lag.start()
            typist.start()
            await wait_until(lambda: "last_token" in model.marks, 120, "the last token")
            typist.stop()
            try:
                await wait_until(lambda: not app.chat.busy, TURN_END_LIMIT_S, "the turn to end")
            except TimeoutError as exc:
                raise TimeoutError(f"{exc}; {stuck_state(app)}") from None
            drained = time.perf_counter()
            await pilot.pause()
            await lag.stop()
            clock.listeners.remove(on_frame)
        first, last = model.marks["first_token"], model.marks["last_token"]
        # The window runs until the whole reply is on screen: a UI that falls behind the
        # model keeps "streaming" after the model has finished.
        end = max(last, drained)
        frames = clock.between(first, end)
        points = [first, *frames, end]
        gaps = [b - a for a, b in itertools.pairwise(points)]
        worst = max(range(len(gaps)), key=gaps.__getitem__) if gaps else 0
        streamed = model.marks["pieces"]
        return {
            "pieces": streamed,
            "estimated_tokens": estimate_tokens(model.reply),
            "stream_s": last - first,
            "rate_per_s": streamed / (last - first),
            "frames": len(frames),
            "fps": len(frames) / (end - first),
            "max_gap_ms": FrameClock.max_gap(frames, first, end) * 1000,
            "gap_p90_ms": spread(gaps).get("p90", 0.0) * 1000,
            "gaps_over_50ms": sum(1 for g in gaps if g > 0.05),
            # Where the worst gap began, from the first token (the stream lasts `stream_s`).
            "worst_gap_at_s": points[worst] - first if gaps else 0.0,
            "loop_lag_max_ms": lag.worst * 1000,
            # From the model's last token until the screen has handled the whole turn.
            "drain_s": drained - last,
            "keystrokes_sent": len(typist.sent),
            "keystrokes_shown": len(seen),
            "keystroke_ms": [(shown - sent) * 1000 for sent, shown in seen],
            "marks": dict(model.marks),
        }


async def measure(quick: bool, progress: Progress) -> tuple[list[Row], dict[str, Any]]:
    startups: list[dict[str, float]] = []
    bares: list[dict[str, float]] = []
    runs = 1 if quick else 5
    for n in range(runs):
        progress(f"tui: start-up {n + 1}/{runs} (subprocess)")
        with temp_home("tui-startup") as home:
            startups.append(await asyncio.to_thread(startup_once, home))
        with temp_home("tui-startup-bare") as home:
            bares.append(await asyncio.to_thread(startup_once, home, bare=True))
    streams: list[dict[str, Any]] = []
    pieces = 300 if quick else 4000
    repeats = 1 if quick else 3
    for n in range(repeats):
        progress(f"tui: streaming {pieces} tokens at {TOKENS_PER_SECOND}/s, {n + 1}/{repeats}")
        streams.append(await stream_once(pieces))

    paint = spread([s["first_paint_s"] for s in startups])
    ready = spread([s["ready_s"] for s in startups])
    imports = spread([s["imports_s"] for s in startups])
    bare_paint = spread([s["first_paint_s"] for s in bares])
    gaps = [s["max_gap_ms"] for s in streams]
    keys = [k for s in streams for k in s["keystroke_ms"]]
    key_stats = spread(keys)
    sent = sum(s["keystrokes_sent"] for s in streams)
    rows = [
        Row(
            "tui",
            "tui.first_paint",
            "time to first paint (from process start)",
            paint["median"],
            "s",
            # Against the floor measured in the same run, not an absolute time.
            target=bare_paint["median"] + FIRST_PAINT_OVER_BARE_S,
            samples=len(startups),
            note=(
                f"a bare Textual app, same run: {bare_paint['median']:.3f} s (+ "
                f"{FIRST_PAINT_OVER_BARE_S:.1f} s is the target); ours "
                f"+{paint['median'] - bare_paint['median']:.3f} s; imports alone "
                f"{imports['median']:.3f} s; max {paint['max']:.3f} s"
            ),
            extra=paint,
        ),
        Row(
            "tui",
            "tui.ready",
            "time to ready: engine up, conversation open",
            ready["median"],
            "s",
            samples=len(startups),
            note=f"max {ready['max']:.3f} s",
            extra=ready,
        ),
        Row(
            "tui",
            "tui.max_frame_gap",
            f"largest frame gap while streaming {pieces:,} tokens",
            max(gaps),
            "ms",
            target=MAX_GAP_TARGET_MS,
            samples=len(streams),
            note=(
                f"worst of {len(streams)} runs (each: "
                + ", ".join(
                    f"{s['max_gap_ms']:.0f} ms at {s['worst_gap_at_s']:.2f} s" for s in streams
                )
                + f" of a {streams[0]['stream_s']:.1f} s stream); "
                f"{sum(s['gaps_over_50ms'] for s in streams)} gaps > 50 ms; "
                f"{streams[0]['fps']:.0f} fps at {streams[0]['rate_per_s']:.0f} tok/s; "
                f"event loop late by ≤ {max(s['loop_lag_max_ms'] for s in streams):.0f} ms"
            ),
        ),
        Row(
            "tui",
            "tui.drain",
            "reply fully on screen after the last token",
            spread([s["drain_s"] for s in streams])["median"],
            "s",
            samples=len(streams),
            note="the UI's backlog when the model stops: 0 means it kept up",
        ),
        Row(
            "tui",
            "tui.keystroke",
            "keystroke → screen while streaming, median",
            key_stats.get("median"),
            "ms",
            samples=len(keys),
            note=(
                f"p90 {key_stats.get('p90', 0):.1f} ms, max {key_stats.get('max', 0):.1f} ms; "
                f"{len(keys)}/{sent} keystrokes shown"
            ),
            extra=key_stats,
        ),
    ]
    return rows, {"startups": startups, "bare_startups": bares, "streams": streams}
