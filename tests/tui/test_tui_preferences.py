"""The theme a person picks is there again next time; a preferences file that cannot be read
is said once and left as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shopbot_tui.app import DARK_THEME, LIGHT_THEME
from shopbot_tui.chat.newest_wins import NewestWins
from shopbot_tui.preferences import (
    FILE_NAME,
    Preferences,
    PreferencesFile,
    PreferencesUnreadable,
)
from tests.support.tui import SIZE, make_app, settle


async def test_the_theme_chosen_is_there_next_time(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == DARK_THEME  # nothing saved yet: Textual's default
        assert not (tmp_path / FILE_NAME).exists()  # starting writes nothing
        app.action_toggle_dark()
        await settle(pilot)
        assert app.theme == LIGHT_THEME
        app.theme = "nord"  # as the command palette's theme picker sets it
        await settle(pilot)
    assert json.loads((tmp_path / FILE_NAME).read_text()) == {"theme": "nord"}

    again = make_app(tmp_path)
    assert again.theme == "nord"  # before the first frame
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.current_theme.name == "nord"
        assert not again.notices


async def test_an_unknown_saved_theme_starts_with_the_default(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text('{"theme": "from-a-newer-textual", "other": 1}')
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == DARK_THEME
        assert not app.notices


@pytest.mark.parametrize("content", [b"{not json", b'["nord"]', b"\xff\xfe theme", b'{"theme": 3}'])
async def test_a_preferences_file_that_cannot_be_read_is_said_and_kept(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(content)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        assert app.theme == DARK_THEME
        problems = [text for severity, title, text in app.notices if title == "Preferences"]
        if content == b'{"theme": 3}':  # a JSON object: only its theme is unusable
            assert problems == []
            return
        assert len(problems) == 1 and str(path) in problems[0]
        assert "left as it is" in problems[0]
        app.action_toggle_dark()
        await settle(pilot)
        assert app.theme == LIGHT_THEME  # used now...
    assert path.read_bytes() == content  # ...and the file is not written over


async def test_a_theme_that_cannot_be_saved_is_said_and_still_used(tmp_path: Path) -> None:
    app = make_app(tmp_path)

    def full_disk() -> None:
        raise OSError(28, "No space left on device")

    app.preferences.flush = full_disk  # type: ignore[method-assign]
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.action_toggle_dark()
        await settle(pilot)
        assert app.theme == LIGHT_THEME
        problems = [text for _, title, text in app.notices if title == "Preferences"]
        assert len(problems) == 1 and "Could not save the theme" in problems[0]
        assert app.chat.is_attached  # the app carries on


def test_the_newest_choice_wins_whichever_write_runs_last(tmp_path: Path) -> None:
    preferences = PreferencesFile(tmp_path)
    preferences.want(Preferences("nord"))
    preferences.want(Preferences("gruvbox"))  # chosen next, before the first write ran
    preferences.flush()  # the second choice's write, say, ran first...
    assert preferences.load() == Preferences("gruvbox")
    preferences.flush()  # ...and the first one's, late, writes nothing older over it
    assert preferences.load() == Preferences("gruvbox")


def test_an_unreadable_file_names_itself(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("[]")
    with pytest.raises(PreferencesUnreadable, match="not a JSON object"):
        PreferencesFile(tmp_path).load()


def test_a_failed_write_is_tried_again_without_undoing_a_newer_choice() -> None:
    unsaved: NewestWins[str, str] = NewestWins()
    written: dict[str, str] = {}

    def disk_full_at_b(key: str, value: str) -> None:
        if key == "b":
            unsaved.want("c", "newest c")  # chosen while the write runs
            raise OSError(28, "No space left on device")
        written[key] = value

    for key in ("a", "b", "c"):
        unsaved.want(key, f"old {key}")
    with pytest.raises(OSError):
        unsaved.flush(disk_full_at_b)
    assert written == {"a": "old a"}
    unsaved.flush(written.__setitem__)  # the next try writes what the failure left
    assert written == {"a": "old a", "b": "old b", "c": "newest c"}
