"""Untrusted text on its way to a terminal or a store: visible, encodable, plain names only."""

from __future__ import annotations

import pytest

from agents.text_safety import MessageRejected, clean_message, person_name, visible

BIDI_CONTROLS = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]


@pytest.mark.parametrize("control", BIDI_CONTROLS)
def test_bidi_controls_are_shown_not_obeyed(control: str) -> None:
    shown = visible(f"Sam{control}evil")
    assert shown == f"Sam\\u{ord(control):04x}evil"
    assert all(c not in shown for c in BIDI_CONTROLS)


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
