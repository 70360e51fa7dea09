"""A paste arrives as the text pasted: in one piece, in its order, escape sequences shown as
signs (␛), in the message box and in the stored conversation."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from textual import constants, events

from agents.store.threads import ThreadRegistry
from shopbot_tui.terminal_input import PASTE_END, PASTE_START, WholePasteParser
from tests.support.terminal import app_in_terminal, wait_for
from tests.support.tui import SIZE, make_app, settle, transcript_on_screen

# What a tester pasted in tmux: the paste's first words came out last, partly as keys.
PASTED = "\x1b[31mRED\x1b[0m order status for ORD-002, esc test"
SHOWN = "␛[31mRED␛[0m order status for ORD-002, esc test"


def _customer_lines(home: Path, thread_id: str) -> list[str]:
    with ThreadRegistry(home / "shopbot.sqlite") as registry:
        return [line.text for line in registry.lines(thread_id) if line.role == "customer"]


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is a Unix thing")
def test_a_paste_with_escape_sequences_arrives_whole_in_a_real_terminal(tmp_path: Path) -> None:
    with app_in_terminal(tmp_path, thread_id="t-paste", customer="Sam") as terminal:
        terminal.type(f"{PASTE_START}{PASTED}{PASTE_END}")
        terminal.type("\r")  # enter
        wait_for(lambda: bool(_customer_lines(tmp_path, "t-paste")), "the message to be stored")
    assert _customer_lines(tmp_path, "t-paste") == [SHOWN]


def _parsed(chunks: list[str]) -> list[events.Event]:
    parser = WholePasteParser()
    tokens = [token for chunk in chunks for token in parser.feed(chunk)]
    return [token for token in tokens if isinstance(token, events.Event)]


def test_a_paste_is_one_event_however_the_reads_cut_it() -> None:
    wire = f"a{PASTE_START}{PASTED}\x1b{PASTE_END}b"
    for cut, second in itertools.combinations(range(1, len(wire)), 2):
        tokens = _parsed([wire[:cut], wire[cut:second], wire[second:]])
        assert [type(token) for token in tokens] == [events.Key, events.Paste, events.Key], cut
        assert tokens[1].text == f"{PASTED}\x1b"  # type: ignore[attr-defined]
        assert [token.key for token in (tokens[0], tokens[2])] == ["a", "b"]  # type: ignore[attr-defined]


def test_keys_around_pastes_are_still_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = _parsed(["\x1b[A", "x", "\x1b[2", "~"])  # up, a letter, insert (read in two)
    assert [token.key for token in tokens] == ["up", "x", "insert"]  # type: ignore[attr-defined]
    # A lone ESC, which might begin a paste, is the escape key once nothing follows it.
    monkeypatch.setattr(constants, "ESCAPE_DELAY", 0.0)
    parser = WholePasteParser()
    assert list(parser.feed("\x1b")) == []
    assert [token.key for token in parser.tick()] == ["escape"]  # type: ignore[attr-defined]


async def test_a_pasted_escape_sequence_is_shown_and_sent_as_signs(tmp_path: Path) -> None:
    app = make_app(tmp_path, thread_id="t-paste")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.chat.message_input
        box.focus()
        box.post_message(events.Paste(PASTED))
        await pilot.pause()
        assert box.value == SHOWN
        await pilot.press("enter")
        await settle(pilot)
        assert transcript_on_screen(app)[1] == ("customer", SHOWN)
    assert _customer_lines(tmp_path, "t-paste") == [SHOWN]
