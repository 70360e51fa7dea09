"""Redaction: credentials go, ordinary support text stays exactly as it was."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents import redaction
from agents.redaction import REDACTED, redact, redact_data, register_secret

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


@pytest.mark.parametrize(
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
