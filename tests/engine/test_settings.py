"""Settings from the environment: a key that cannot be one is refused without being echoed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agents.errors import ConfigurationError, InputError
from agents.models.factory import make_model
from agents.settings import Settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MISTRAL_API_KEY", "MISTRAL_BASE_URL", "SHOPBOT_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_surrounding_whitespace_is_dropped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "  Ab3dEf6hIj9kLm2n\r\n")
    settings = Settings.from_env(home=tmp_path)
    assert settings.api_key == "Ab3dEf6hIj9kLm2n"
    assert not settings.offline


def test_a_blank_key_means_the_offline_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", " \t\n")
    assert Settings.from_env(home=tmp_path).offline


@pytest.mark.parametrize(
    "key",
    [
        "Part1secret\nPart2secret",
        "Part1secret Part2secret",
        "Part1secret\tPart2secret",
        "Part1secret\x1bPart2secret",
        "Part1secret\u00a0Part2secret",
        "Part1secret\u200bPart2secret",
        "Part1secretéPart2secret",
    ],
)
def test_a_key_with_inner_whitespace_or_control_characters_is_refused_unechoed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key: str
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", key)
    settings = Settings.from_env(home=tmp_path)
    assert not settings.offline  # never the offline model instead of the key that was set
    assert Settings.from_env(home=tmp_path, offline=True).offline  # --offline needs no key
    with pytest.raises(ConfigurationError) as refused:
        make_model(settings)
    message = str(refused.value)
    assert "MISTRAL_API_KEY" in message and "\n" not in message
    assert "Part1" not in message and "Part2" not in message
    assert isinstance(refused.value, InputError)  # the CLI's exit 2
    # Still someone's key, mistyped: redacted like a good one (pasted, or in an error text).
    assert key.strip() in settings.secrets()
    assert "Part1" not in repr(settings)


def test_credentials_in_the_base_url_are_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "Ab3dEf6hIj9kLm2n")
    monkeypatch.setenv("MISTRAL_BASE_URL", "http://proxyuser:hunter2%40secret@127.0.0.1:9/v1")
    settings = Settings.from_env(home=tmp_path)
    # httpx sends the userinfo as Basic auth (the key is not sent): a proxy may echo it bare.
    auth = httpx.BasicAuth("proxyuser", "hunter2@secret")
    sent = next(auth.sync_auth_flow(httpx.Request("POST", "http://127.0.0.1:9/v1")))
    basic = sent.headers["Authorization"].removeprefix("Basic ")
    assert settings.secrets() == ("Ab3dEf6hIj9kLm2n", "hunter2%40secret", "hunter2@secret", basic)
    assert "hunter2" not in repr(settings)
    monkeypatch.setenv("MISTRAL_BASE_URL", "http://127.0.0.1:9/v1")
    assert Settings.from_env(home=tmp_path).secrets() == ("Ab3dEf6hIj9kLm2n",)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",  # httpx: InvalidURL, said as "unexpected error"
        "http://127.0.0.1:99999/v1",  # a port past 65535: "went wrong inside ShopBot"
        "http://127.0.0.1:8799/v1\n",  # a pasted line break: InvalidURL
        "http://127.0.0.1:abc/v1",
        " ",  # ChatMistralAI reads the variable unstripped: " " is its endpoint
        "not a url",  # these three were retried four times as "cannot be reached"
        "ftp://127.0.0.1/v1",
        "http://",
        "http://proxyuser:hunter2@[::1/v1",
    ],
)
def test_a_base_url_that_cannot_be_one_is_refused_unechoed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "Ab3dEf6hIj9kLm2n")
    monkeypatch.setenv("MISTRAL_BASE_URL", url)
    settings = Settings.from_env(home=tmp_path)
    assert not settings.offline
    with pytest.raises(ConfigurationError) as refused:
        make_model(settings)
    message = str(refused.value)
    assert "MISTRAL_BASE_URL" in message and "\n" not in message
    assert "hunter2" not in message
    assert isinstance(refused.value, InputError)  # the CLI's exit 2
    # Without a key, or with --offline, the URL is not used: nothing to refuse.
    assert Settings.from_env(home=tmp_path, offline=True).offline
    monkeypatch.delenv("MISTRAL_API_KEY")
    assert Settings.from_env(home=tmp_path).offline


@pytest.mark.parametrize(
    "url",
    [
        "",
        "http://127.0.0.1:9/v1",
        "https://api.mistral.ai/v1",
        "http://proxyuser:hunter2%40secret@127.0.0.1:9/v1",
        "http://[::1]:8080",
        "HTTPS://Example.com",
    ],
)
def test_a_usable_base_url_is_left_to_the_client(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "Ab3dEf6hIj9kLm2n")
    monkeypatch.setenv("MISTRAL_BASE_URL", url)
    settings = Settings.from_env(home=tmp_path)
    assert settings.provider_problem is None
    assert make_model(settings) is not None
