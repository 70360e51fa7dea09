"""Who a ShopBot server takes a request to be from (agents/serving/auth.py), without a server."""

from __future__ import annotations

import importlib
import logging

import pytest
from langgraph_sdk import Auth

from agents.errors import ConfigurationError
from agents.reviewer import login_name
from agents.safety.redaction import redact
from agents.serving import auth as served_auth

TOKEN = "dana-0123456789-token"


def test_operators_are_named_with_their_tokens() -> None:
    assert served_auth.operator_tokens(f" dana : {TOKEN} ,, lee:{TOKEN[::-1]}") == {
        TOKEN: "dana",
        TOKEN[::-1]: "lee",
    }


@pytest.mark.parametrize("value", ["dana", f":{TOKEN}", "dana:short", f"dana:{TOKEN} two"])
def test_a_malformed_entry_is_refused_without_its_token(value: str) -> None:
    with pytest.raises(ConfigurationError, match="SHOPBOT_OPERATOR_TOKENS: entry 1") as refused:
        served_auth.operator_tokens(value)
    assert TOKEN not in str(refused.value)


async def test_a_request_is_the_operator_whose_token_it_carries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(served_auth, "TOKENS", {TOKEN: "dana"})
    # As langgraph-api hands the headers (bytes), and as Aegra does (text).
    for headers in (
        {b"authorization": f"Bearer {TOKEN}".encode()},
        {"authorization": f"Bearer {TOKEN}"},
    ):
        assert (await served_auth.authenticate(headers))["identity"] == "dana"
    for header, status in (("", 401), ("Basic abc", 401), (f"Bearer {TOKEN}x", 403)):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            await served_auth.authenticate({b"authorization": header.encode()} if header else {})
        assert refused.value.status_code == status


async def test_without_tokens_the_server_is_the_login_names_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SHOPBOT_OPERATOR_TOKENS", "")
    with caplog.at_level(logging.WARNING, logger="shopbot.serving"):
        anonymous = importlib.reload(served_auth)
    assert "SHOPBOT_OPERATOR_TOKENS is not set" in caplog.text
    assert (await anonymous.authenticate({}))["identity"] == login_name()


def test_tokens_are_redacted_once_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOPBOT_OPERATOR_TOKENS", f"dana:{TOKEN}")
    importlib.reload(served_auth)
    assert TOKEN not in redact(f"the header was Bearer {TOKEN} and {TOKEN}")
