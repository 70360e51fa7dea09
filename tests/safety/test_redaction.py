"""Redaction: credentials go, ordinary support text stays exactly as it was."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.safety import redaction
from agents.safety.redaction import (
    REDACTED,
    STREAM_CONTEXT_WORDS,
    StreamRedactor,
    redact,
    redact_data,
    register_secret,
)

MISTRAL_KEY = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"  # 32 alphanumerics, the Mistral shape


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    # register_secret is process-wide; keep each test's registrations to itself.
    monkeypatch.setattr(redaction, "_registered", set())


def test_given_secret_is_replaced_everywhere() -> None:
    secret = "my-very-own-secret-value"
    out = redact(f"a {secret} b {secret}", secrets=[secret])
    assert out == f"a {REDACTED} b {REDACTED}"


def test_short_and_empty_secrets_are_ignored() -> None:
    text = "Order ORD-001 for Alex"
    assert redact(text, secrets=["", "Alex", "ORD-001"]) == text


def test_registered_secret_applies_to_later_calls() -> None:
    secret = "registered-secret-123"
    assert redact(f"x {secret}") == f"x {secret}"
    register_secret(secret)
    assert redact(f"x {secret}") == f"x {REDACTED}"
    register_secret("short")
    assert redact("short") == "short"


CREDENTIAL_SHAPES = pytest.mark.parametrize(
    ("text", "leak"),
    [
        ("Authorization: Bearer abcdef123456", "abcdef123456"),
        ('{"authorization": "Basic dXNlcjpwYXNz"}', "dXNlcjpwYXNz"),
        ("curl -H 'Bearer abc123def456ghi'", "abc123def456ghi"),
        ("api_key=abc123secretvalue", "abc123secretvalue"),
        ("apikey: hunter2hunter2", "hunter2hunter2"),
        ('{"api_key": "s3cr3t-v4lue"}', "s3cr3t-v4lue"),
        ("MISTRAL_API_KEY=xyz987xyz987", "xyz987xyz987"),
        ("export OPENAI_API_KEY='q1w2e3r4t5'", "q1w2e3r4t5"),
        ("key sk-proj-abcdefghijklmnop1234 here", "sk-proj-abcdefghijklmnop1234"),
        ("sk-ABCDEFGHIJKLMNOPQRSTUVWX", "sk-ABCDEFGHIJKLMNOPQRSTUVWX"),
        (f"the key is {MISTRAL_KEY}.", MISTRAL_KEY),
        (f"url?key={MISTRAL_KEY}&x=1", MISTRAL_KEY),
        ("fetching http://proxyuser:hunter2secret@127.0.0.1:8080/v1/chat", "hunter2secret"),
        ("URL('https://user:p%40ss@proxy.example/v1')", "p%40ss"),
        ("socks5h://me:unescaped@at@proxy:1080 down", "unescaped@at"),
        ("git clone https://ghp_token123@github.com/x/y", "ghp_token123"),
    ],
)


@CREDENTIAL_SHAPES
def test_credential_shapes_are_redacted(text: str, leak: str) -> None:
    out = redact(text)
    assert leak not in out
    assert REDACTED in out


def test_labels_survive_so_the_reader_knows_what_was_removed() -> None:
    assert redact("MISTRAL_API_KEY=xyz987xyz987") == f"MISTRAL_API_KEY={REDACTED}"
    assert redact("Authorization: Bearer abcdef123456") == f"Authorization: {REDACTED}"
    assert (
        redact("for url 'http://proxyuser:hunter2secret@127.0.0.1:9/v1/chat/completions'")
        == f"for url 'http://{REDACTED}@127.0.0.1:9/v1/chat/completions'"
    )


@pytest.mark.parametrize(
    "secret", ["Part1secret\nPart2secret", "tab\there-and-quote'x", "caf\u00e9-secret-key"]
)
def test_a_registered_secret_is_redacted_in_its_escaped_forms(secret: str) -> None:
    secret = secret.encode().decode("unicode_escape")  # the real newline, tab, é
    register_secret(secret)
    quoted = [
        f"Illegal header value {b'Bearer ' + secret.encode()!r}",
        f"got {secret!r} instead",
        json.dumps({"key": secret}),
        f"plain {secret} text",
    ]
    for text in quoted:
        out = redact(text)
        assert REDACTED in out, out
        assert all(part not in out for part in secret.split() if len(part) >= 4), out
        assert "secret" not in out and "Part2" not in out, out


@pytest.mark.parametrize(
    "text",
    [
        "Where is my order ORD-001? It was due on 2025-06-10.",
        "Refund REF-ORD-004-A1B2C3 was processed for 649.00",
        "thread 3f2b8c1e-9a4d-4e7b-8c2a-1d5e6f7a8b9c at 2025-06-18T10:20:30.123Z",
        "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word",
        "Die Donaudampfschifffahrtsgesellschaftskapitaensmuetze",
        "SUPERCALIFRAGILISTICEXPIALIDOCIOUSLY LOUD",
        "The bearer of this note, a task-force member, is disappointed.",
        "Привет, где мой заказ? 我的订单在哪里？ [bold]x[/bold] 100% a_b",
        "See https://shop.example/orders/ORD-001?ref=mail and write to help@shop.example",
        "abc",
        "",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "ORD-002" + "x" * 3_000,  # it showed as "ORD-[REDACTED]"
        "Where is ORD-002" + "0" * 40 + "?",
        "ORD-002" + "ab" * 100,
        "Refund REF-ORD-004-" + "A1" * 30,
    ],
    ids=["3000 x", "40 zeros", "ab repeated", "A1 repeated"],
)
def test_a_long_run_of_one_or_two_characters_is_not_a_secret(text: str) -> None:
    assert redact(text) == text
    assert "".join(_streamed(text, [7, 50, 500])) == text


def test_a_key_beside_a_long_run_of_one_character_is_still_redacted() -> None:
    assert redact(f"{MISTRAL_KEY}{'x' * 100} ok") == f"{REDACTED} ok"
    assert redact(f"{'0' * 12}{MISTRAL_KEY}") == REDACTED
    assert redact("fakeMistralKey" + "0" * 18) == REDACTED


def test_redact_data_walks_nested_structures_and_keys() -> None:
    secret = "nested-secret-value-1"
    data: dict[str, Any] = {
        "args": ["ok", {"token": f"Bearer {secret}"}, (f"x {secret}",)],
        secret: 1,
        "amount": 89.99,
        "order": "ORD-001",
        "none": None,
    }
    out = redact_data(data, secrets=[secret])
    assert out == {
        "args": ["ok", {"token": f"Bearer {REDACTED}"}, (f"x {REDACTED}",)],
        REDACTED: 1,
        "amount": 89.99,
        "order": "ORD-001",
        "none": None,
    }
    assert data["args"][0] == "ok" and secret in data  # the input is not modified


def test_redaction_is_stable_when_applied_twice() -> None:
    once = redact(f"api_key={MISTRAL_KEY} Authorization: Bearer abcdef123456")
    assert redact(once) == once


def test_a_piece_of_a_registered_key_is_redacted_too() -> None:
    # A model that repeats half the key it saw: 12 of its characters in a row are enough.
    register_secret(MISTRAL_KEY)
    assert redact(f"it starts {MISTRAL_KEY[:16]}, ends {MISTRAL_KEY[-12:]}.") == (
        f"it starts {REDACTED}, ends {REDACTED}."
    )
    # Shorter pieces, and runs that merely share a few characters with it, stay.
    assert redact(f"see {MISTRAL_KEY[:11]} and Ab3dEf6hIj9kXXXX") == (
        f"see {MISTRAL_KEY[:11]} and Ab3dEf6hIj9kXXXX"
    )


def test_a_registered_secret_with_spaces_is_redacted_word_by_word() -> None:
    register_secret("Part1secretword Part2secretword")
    assert redact("got Part2secretword") == f"got {REDACTED}"


def _streamed(text: str, cuts: list[int]) -> list[str]:
    """What a StreamRedactor shows of `text` arriving in pieces cut at `cuts`."""
    shield = StreamRedactor()
    bounds = [0, *sorted({c % (len(text) + 1) for c in cuts}), len(text)]
    shown = [shield.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    return [*shown, shield.flush()]


@CREDENTIAL_SHAPES
@given(cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_a_streamed_credential_never_shows_in_any_piece(
    text: str, leak: str, cuts: list[int]
) -> None:
    reply = f"Sure. {text} Anything else?"
    shown = _streamed(reply, cuts)
    assert "".join(shown) == redact(reply)
    assert all(leak[:8] not in piece for piece in shown)


@given(
    size=st.integers(min_value=1, max_value=7),
    filler=st.integers(min_value=0, max_value=300),
)
def test_a_registered_key_streamed_in_small_pieces_never_shows_even_in_part(
    size: int, filler: int
) -> None:
    register_secret(MISTRAL_KEY)
    reply = "word " * (filler // 5) + f"Your key is {MISTRAL_KEY} so keep it, and Bearer "
    reply += f"{MISTRAL_KEY.lower()}9 too."
    shield = StreamRedactor()
    shown = [shield.feed(reply[i : i + size]) for i in range(0, len(reply), size)]
    shown.append(shield.flush())
    # A piece is shown whole words at a time, so no prefix of the key gets out either.
    assert all(MISTRAL_KEY[:4] not in piece and "ab3def6h" not in piece for piece in shown)
    assert "".join(shown) == redact(reply)
    assert "".join(shown).endswith(f"Your key is {REDACTED} so keep it, and Bearer {REDACTED} too.")


def test_a_label_a_few_words_back_still_counts() -> None:
    # `"Authorization" : Bearer <value>`: the label four words before the value it names.
    shield = StreamRedactor()
    shown = [shield.feed("x " * 300), shield.feed('"Authorization" '), shield.feed(": ")]
    shown += [shield.feed("Bearer "), shield.feed("abc123def456 "), shield.flush()]
    assert STREAM_CONTEXT_WORDS == 4
    assert "".join(shown).endswith(f'"Authorization" : {REDACTED} ')
    assert not any("abc123" in piece for piece in shown)


def test_ordinary_text_streams_through_unchanged_a_word_behind() -> None:
    shield = StreamRedactor()
    assert shield.feed("Your order ORD-0") == "Your order "
    assert shield.feed("01 was deliv") == "ORD-001 was "
    assert shield.feed("ered.") == ""
    assert shield.flush() == "delivered."
    assert shield.flush() == ""


_PIECES = [
    "Authorization", "PROXY-authorization", '"', "'", ":", "=", " ", "\n", "Bearer", "basic",
    "Token", "api_key", "API-KEY", "MISTRAL_API_KEY", "client_secret", "password", "sk-",
    "proj-", "abcdefghijklmnop1234", "://", "https", "user:pw@", "host", "/v1", "x", "42",
    MISTRAL_KEY[:20], MISTRAL_KEY[20:], "ORD-001", "é", "&",
]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join))
def test_the_quick_check_never_skips_a_text_the_shapes_would_change(text: str) -> None:
    assert redact(text) == redaction._shapes(text, ())


def test_a_scheme_far_from_its_value_is_shown_again_redacted_not_leaked() -> None:
    # Spaces after "Basic" hide that it is a scheme: it is shown as a credential first
    # ("[REDACTED]"), then the value arrives and the part that reads differently follows.
    shield = StreamRedactor()
    shown = [shield.feed("Authorization: Basic" + " " * 12), shield.feed("dXNlcjpwYXNz "), ""]
    shown[2] = shield.flush()
    assert shown[0] == f"Authorization: {REDACTED}" + " " * 12
    assert all("dXNl" not in piece for piece in shown)
    assert redact("".join(shown)) == "".join(shown)


def test_a_reply_without_spaces_streams_at_once_and_still_hides_a_key() -> None:
    # Chinese has no spaces: its words show as they come, not at the end of the line.
    register_secret(MISTRAL_KEY)
    shield = StreamRedactor()
    assert shield.feed("您的订单") == "您的订单"
    assert shield.feed("已发货。密钥是") == "已发货。密钥是"
    pieces = [shield.feed(MISTRAL_KEY[i : i + 5]) for i in range(0, len(MISTRAL_KEY), 5)]
    pieces += [shield.feed("，请保管好。"), shield.flush()]
    assert not any(MISTRAL_KEY[:4] in piece for piece in pieces)
    assert "".join(pieces) == f"{REDACTED}，请保管好。"


def test_a_long_run_without_spaces_keeps_streaming_in_step() -> None:
    # A few thousand characters with no ASCII word: each piece shows as it arrives.
    shield = StreamRedactor()
    text = "这是一段很长的中文回复" * 400
    shown = [shield.feed(text[i : i + 3]) for i in range(0, len(text), 3)]
    assert shown == [text[i : i + 3] for i in range(0, len(text), 3)]
    assert shield.flush() == ""


@given(st.characters(codec=None))
def test_a_stream_word_ends_at_whitespace_or_a_letter_outside_ascii(char: str) -> None:
    """The boundary class is written by what it excludes (it compiles 40x faster): the same
    characters as `[\\s\\x80-\\U0010ffff]`."""
    ends = bool(redaction._NEXT_BOUNDARY.match(char))
    assert ends == (char.isspace() or ord(char) >= 0x80)


def test_every_ascii_character_ends_a_stream_word_only_when_it_is_whitespace() -> None:
    for code in range(0x80):
        char = chr(code)
        assert bool(redaction._NEXT_BOUNDARY.match(char)) == char.isspace(), repr(char)
