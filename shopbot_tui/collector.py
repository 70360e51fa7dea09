"""Keeps Python's full garbage collections from stalling the screen while a turn runs.

A full collection walks every object younger than the last `gc.freeze()`, the rendered lines
of the conversation among them: at 500 tokens/s one ran every ~0.7 s and took 20 to 110 ms,
a visible stall each time (tests/perf). While a turn runs, full collections wait; the young
generations are still collected (about a millisecond each), so garbage in reference cycles
is still freed, and the one deferred full collection runs after the turn, when nothing moves.
Turning the collector off altogether (as Textual does while it scrolls) was worse here: the
first collection after a long reply had every object of the turn to walk (0.4 s).
"""

from __future__ import annotations

import gc

# Full collections happen after this many collections of the middle generation.
_NO_FULL_COLLECTIONS = 1 << 30
FULL_COLLECTION_EVERY = 100  # CPython's default is 10


def pause_for_start_up() -> None:
    """The first thing `shopbot` does (launch.py): no collections until the engine is up
    (`resume_after_start_up`) or has failed (`resume_collecting`). Starting imports Textual,
    then LangChain and LangGraph: objects that live as long as the process, which the
    collector walked some 400 times before the first frame for next to nothing to free
    (~40 ms of ~0.35 s there, and ~0.4 s of the ~2 s until the engine was up). What little
    start-up garbage there was (~12,000 objects, a few MB: widgets and caches of the loading
    screen) is frozen with the rest and stays: collecting it first stalled the screen 0.15 s."""
    gc.disable()


def resume_after_start_up() -> None:
    """A command's engine is up: if `pause_for_start_up` paused collections (a `shopbot`
    process), what start-up loaded is set aside and they resume; otherwise (the CLI called in
    a process that collects, a test) nothing changes: freezing there kept the garbage of
    whatever ran before for good, an unclosed connection's thread with it."""
    if not gc.isenabled():
        set_aside_long_lived()


def resume_collecting() -> None:
    """Collections as usual again (the engine failed to start: nothing to set aside)."""
    gc.enable()


def set_aside_long_lived() -> None:
    """Once the engine is up: what is alive now (Textual, LangChain, LangGraph, pydantic, a
    few hundred thousand objects) stays alive, so it goes out of the collector's sight and a
    full collection no longer walks it (~0.1 s each). With so little left in sight, CPython
    (which runs a full collection once the survivors grow by a quarter) would run them ten
    times as often: they are kept about as rare as before. Collections resume if start-up
    paused them."""
    gc.freeze()
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, max(full, FULL_COLLECTION_EVERY))
    gc.enable()


class CollectorPause:
    """Full collections wait while at least one key (a thread with a turn) holds them."""

    def __init__(self) -> None:
        self._holders: set[str] = set()
        self._thresholds: tuple[int, int, int] | None = None

    @property
    def held(self) -> bool:
        return bool(self._holders)

    def hold(self, key: str) -> None:
        if not self._holders:
            self._thresholds = gc.get_threshold()
            young, middle, _ = self._thresholds
            gc.set_threshold(young, middle, _NO_FULL_COLLECTIONS)
        self._holders.add(key)

    def release(self, key: str) -> None:
        if key not in self._holders:
            return
        self._holders.discard(key)
        if not self._holders and self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None

    def release_all(self) -> None:
        for key in list(self._holders):
            self.release(key)
