"""Untrusted text on its way to a terminal or a store: visible, encodable, plain names only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.safety.text import (
    MessageRejected,
    clean_message,
    person_name,
    safe_json,
    undecodable_bytes,
    visible,
    visible_line,
)

# Embeddings and overrides, isolates, and the three marks (LRM, RLM, ALM): each can make a
# terminal show "ORD-001" or "$14.99" in another order than it is stored.
BIDI_CONTROLS = [
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
]
# What must never reach a terminal as it is: C0 (but newline and tab), DEL, C1, bidi
# controls, lone surrogates.
FORBIDDEN = {
    *(chr(c) for c in range(0x20) if chr(c) not in "\n\t"),
    *(chr(c) for c in range(0x7F, 0xA0)),
    *BIDI_CONTROLS,
}


@pytest.mark.parametrize("control", BIDI_CONTROLS)
def test_bidi_controls_are_shown_not_obeyed(control: str) -> None:
    shown = visible(f"Sam{control}evil")
    assert shown == f"Sam\\u{ord(control):04x}evil"
    assert all(c not in shown for c in BIDI_CONTROLS)


@pytest.mark.parametrize("mark", ["\u200e", "\u200f", "\u061c"])
def test_a_bidi_mark_inside_an_order_id_is_shown(mark: str) -> None:
    shown = visible(f"Refund ORD{mark}-001 for $14.99")
    assert shown == f"Refund ORD\\u{ord(mark):04x}-001 for $14.99"
    # A customer's message keeps it: right-to-left writing uses the marks, and the model
    # reads what was typed; shown anywhere, it is escaped (above).
    assert clean_message(f"שלום{mark} ORD-001?") == f"שלום{mark} ORD-001?"


def _is_surrogate(char: str) -> bool:
    return 0xD800 <= ord(char) <= 0xDFFF


# Any text, with the characters that matter drawn far more often than chance would.
any_text = st.text(
    st.one_of(
        st.characters(exclude_categories=()),  # surrogates included
        st.sampled_from([*BIDI_CONTROLS, "\x1b", "\x9b", "\r", "\n", "\udcff", "\\"]),
    )
)


@given(any_text)
def test_nothing_visible_returns_can_steer_a_terminal(text: str) -> None:
    shown = visible(text)
    assert not FORBIDDEN.intersection(shown)
    assert not any(_is_surrogate(c) for c in shown)
    assert visible(shown) == shown  # showing twice changes nothing more


@given(st.text(st.characters(exclude_categories=("Cc", "Cs"))))
def test_text_without_controls_is_shown_as_it_is(text: str) -> None:
    text = "".join(c for c in text if c not in BIDI_CONTROLS)
    assert visible(text) == text


@given(any_text)
def test_a_visible_line_is_one_safe_line(text: str) -> None:
    line = visible_line(text)
    assert not FORBIDDEN.intersection(line) and "\n" not in line and "\t" not in line
    line.encode("utf-8")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # Undecodable bytes (surrogateescape) as the bytes they were, raw or as repr() has it.
        ("thread t\udcff\udcfe", "thread t\\xff\\xfe"),
        ("Invalid thread id 't\\udcc3': use letters", "Invalid thread id 't\\xc3': use letters"),
        # An escaped backslash followed by "udcff" is text, not a byte.
        (repr("a\\udcff"), repr("a\\udcff")),
        ("unrecognized arguments: \x1b[31mred\x9b", "unrecognized arguments: ␛[31mred\\x9b"),
        ("two\nlines\tand a tab", "two␊lines␉and a tab"),
        (
            "a line\u2028separator\u2029and a paragraph one",
            "a line\\u2028separator\\u2029and a paragraph one",
        ),
        ("ORD\u200f-001 \u202eevil", "ORD\\u200f-001 \\u202eevil"),
        ("Café 我的订单 ?", "Café 我的订单 ?"),
    ],
)
def test_visible_line(text: str, line: str) -> None:
    assert visible_line(text) == line


def _with_replacements(value: Any) -> Any:
    if isinstance(value, str):
        return "".join("\ufffd" if _is_surrogate(c) else c for c in value)
    if isinstance(value, list):
        return [_with_replacements(item) for item in value]
    if isinstance(value, dict):
        return {_with_replacements(k): _with_replacements(v) for k, v in value.items()}
    return value


json_values = st.recursive(
    st.none() | st.integers() | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_safe_json_is_the_same_data_in_a_form_a_terminal_cannot_obey(value: Any) -> None:
    dumped = safe_json(value)
    assert not FORBIDDEN.intersection(dumped) and "\n" not in dumped
    dumped.encode("utf-8")
    # The same data, but a lone surrogate (never valid UTF-8) is U+FFFD, as when stored.
    assert json.loads(dumped) == _with_replacements(value)


@pytest.mark.parametrize(
    "text",
    [
        "שלום, איפה ההזמנה שלי ORD-001?",  # right-to-left text needs no control characters
        "مرحبا ORD-002",
        "family 👨\u200d👩\u200d👧 and Persian می\u200cخواهم",  # joiners shape text: kept
        "Привет 我的订单 café",
    ],
)
def test_ordinary_text_of_any_script_is_untouched(text: str) -> None:
    assert visible(text) == text


def test_lone_surrogates_become_the_replacement_character() -> None:
    # What Python makes of the byte \xff in argv (surrogateescape): not writable as UTF-8.
    assert visible("Where is ORD-002 \udcff") == "Where is ORD-002 \ufffd"
    cleaned = clean_message("  Where is ORD-002 \udcff\ud83d  ")
    assert cleaned == "Where is ORD-002 \ufffd\ufffd"
    cleaned.encode("utf-8")
    assert undecodable_bytes("Where is ORD-002 \udcff\udcfe") == 2
    assert undecodable_bytes("Where is ORD-002 \ufffd") == 0


@pytest.mark.parametrize("text", ["\udcff\udcfe", " \udcff \n\udc80 "])
def test_a_message_with_nothing_readable_is_refused(text: str) -> None:
    # Sending "\ufffd\ufffd" would lose the whole message without a word.
    with pytest.raises(MessageRejected, match="not valid text"):
        clean_message(text)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("Sam\udcff", "not valid text"),
        ("Sam\u202eevil", "invisible formatting"),
        ("\u2067Alex\u2069", "invisible formatting"),
        ("Al\u200bex", "invisible formatting"),
        ("Al\u200dex", "invisible formatting"),
        ("\ufeffAlex", "invisible formatting"),
        ("Al\u200eex", "invisible formatting"),
        ("A\x1bB", "control characters"),
        ("A\x9bB", "control characters"),
    ],
)
def test_customer_names_with_hidden_characters_are_refused(value: str, reason: str) -> None:
    with pytest.raises(MessageRejected, match=reason):
        person_name(value)


@pytest.mark.parametrize("value", ["Sam", "José Álvarez", "Zoë", "Алексей", "李雷", "سارة"])
def test_plain_names_of_any_script_pass(value: str) -> None:
    assert person_name(f"  {value} ") == value


@pytest.mark.parametrize(
    "unreadable",
    ["\x07\x1b\x01", "\u200b\u200b", "\u200e", "\u202e\u2066", " \t\u200b\n", "\x1b"],
)
def test_a_message_of_nothing_readable_is_refused(unreadable: str) -> None:
    with pytest.raises(MessageRejected, match=r"nothing readable|empty"):
        clean_message(unreadable)


@pytest.mark.parametrize("readable", ["?", "1", "\u05e9\u200f", "😀", "\x1b[2J"])
def test_a_single_readable_character_is_enough(readable: str) -> None:
    assert clean_message(readable)
