"""`shopbot` starts with Python's collector paused (launch.py) and resumes it once there is an
engine, or once it is clear there will be none: never left paused in a running app."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from agents.runner.engine import ShopBotEngine
from shopbot_tui import launch
from shopbot_tui.cli import main as cli
from shopbot_tui.collector import pause_for_start_up
from tests.cli.conftest import home  # noqa: F401  (the fixture: SHOPBOT_HOME in tmp_path)
from tests.support.tui import make_app, settle, wait_until


def test_the_command_pauses_collections_before_anything_else_loads(
    collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def command_line() -> int:
        seen.append(gc.isenabled())
        return 7

    monkeypatch.setattr(cli, "main", command_line)
    assert launch.main() == 7
    assert seen == [False]


async def test_the_app_resumes_collections_once_its_engine_is_up(
    collector: None, tmp_path: Path
) -> None:
    pause_for_start_up()
    app = make_app(tmp_path)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.chat.thread_ready, "the engine")
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what start-up loaded is set aside, not walked


class EngineThatCannotStart(ShopBotEngine):
    async def start(self) -> None:
        raise RuntimeError("no engine today")


async def test_the_app_resumes_collections_when_its_engine_cannot_start(
    collector: None, tmp_path: Path
) -> None:
    pause_for_start_up()
    app = make_app(tmp_path, engine_class=EngineThatCannotStart)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app._exit_code == 1, "the engine to fail")
        await settle(pilot)
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0  # nothing set aside: no engine came up


@pytest.mark.parametrize(
    "argv",
    [
        ["threads"],  # no engine: resumed before the store is read
        ["chat", "--offline", "t-1", "Where is my order ORD-001?"],  # once the engine is up
    ],
)
@pytest.mark.usefixtures("home")
def test_a_headless_command_resumes_collections(collector: None, argv: list[str]) -> None:
    pause_for_start_up()
    assert cli.main(argv) == 0
    assert gc.isenabled()


async def test_an_app_in_a_process_that_collects_sets_nothing_aside(
    collector: None, tmp_path: Path
) -> None:
    """Started other than by `shopbot` (a test, here): nothing is frozen, or each app started
    would keep the garbage of all that ran before it, for good."""
    before = gc.get_freeze_count()
    app = make_app(tmp_path)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: app.chat.thread_ready, "the engine")
        assert gc.isenabled() and gc.get_freeze_count() == before


@pytest.mark.usefixtures("home")
def test_the_command_line_in_a_process_that_collects_sets_nothing_aside(collector: None) -> None:
    before = gc.get_freeze_count()
    assert cli.main(["chat", "--offline", "t-1", "Where is my order ORD-001?"]) == 0
    assert gc.isenabled() and gc.get_freeze_count() == before
