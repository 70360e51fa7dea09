"""The garbage collector in the test processes: what the tests imported is set aside once,
and the tests that drive the collector themselves get it back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


def set_aside_what_is_loaded() -> None:
    """Everything alive now (the imported modules, pytest's collected items) lives as long as
    the process: out of the collector's sight, as `shopbot` sets its start-up aside
    (shopbot_tui/collector.py). Walked by every full collection, it was about half of their
    time in a TUI test file."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    set_aside_what_is_loaded()


@pytest.fixture
def collector() -> Iterator[None]:
    """A test that pauses, freezes or retunes the collector starts with nothing set aside,
    and the tests after it find the collector as the run set it up."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.enable()
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    set_aside_what_is_loaded()
