"""Where ShopBot keeps its data and which model it talks to, read from the environment.

Imports nothing heavy: the TUI reads settings before LangChain is loaded.
"""

from __future__ import annotations

import base64
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from agents.errors import ConfigurationError

DEFAULT_MODEL = "mistral-small-latest"
OFFLINE_MODEL_LABEL = "offline demo"


def default_home() -> Path:
    """`SHOPBOT_HOME`, else the platform's per-user data folder."""
    configured = os.environ.get("SHOPBOT_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("shopbot", appauthor=False))


@dataclass(frozen=True)
class Settings:
    """Resolved configuration for one process."""

    home: Path
    model_name: str = DEFAULT_MODEL
    # The key itself never appears in repr(): settings get logged and shown.
    api_key: str | None = field(default=None, repr=False)
    force_offline: bool = False
    # Only read for its credentials (to redact them): ChatMistralAI reads the endpoint itself.
    base_url: str | None = field(default=None, repr=False)
    # Why MISTRAL_API_KEY (or, with a key, MISTRAL_BASE_URL) cannot be used, said when a
    # model is made: `--offline`, `threads` and `audit` need neither and work with a mistyped one.
    provider_problem: str | None = None
    # A MISTRAL_API_KEY refused as malformed is still someone's key: redacted all the same.
    refused_key: str | None = field(default=None, repr=False)
    # SHOPBOT_DATABASE_URL: every store in this PostgreSQL database instead of the home's
    # SQLite file. It may hold a password: never in repr(), shown only as `database_shown`.
    database_url: str | None = field(default=None, repr=False)
    # SHOPBOT_SERVER_URL (or `--server`): the fronts work with that ShopBot server instead of
    # this machine's home; SHOPBOT_SERVER_TOKEN is the operator's token there.
    server_url: str | None = None
    server_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, *, offline: bool = False, home: Path | None = None) -> Settings:
        """Settings from the environment; a key or endpoint that cannot be one is kept as
        `provider_problem`."""
        key: str | None = None
        problem: str | None = None
        refused: str | None = None
        try:
            key = api_key_from(os.environ.get("MISTRAL_API_KEY", ""))
        except ConfigurationError as exc:
            problem = str(exc)
            refused = os.environ.get("MISTRAL_API_KEY", "").strip()
        if key is not None:
            # Read raw, as ChatMistralAI reads it (unstripped).
            problem = base_url_problem(os.environ.get("MISTRAL_BASE_URL", ""))
        return cls(
            home=home or default_home(),
            model_name=os.environ.get("SHOPBOT_MODEL", "").strip() or DEFAULT_MODEL,
            api_key=key,
            force_offline=offline,
            base_url=os.environ.get("MISTRAL_BASE_URL", "").strip() or None,
            provider_problem=problem,
            refused_key=refused,
            database_url=os.environ.get("SHOPBOT_DATABASE_URL", "").strip() or None,
            server_url=os.environ.get("SHOPBOT_SERVER_URL", "").strip() or None,
            server_token=os.environ.get("SHOPBOT_SERVER_TOKEN", "").strip() or None,
        )

    @property
    def offline(self) -> bool:
        """True when the offline demo model drives the graph (never instead of a key that
        was set but cannot be used: that is said, see `provider_problem`)."""
        return self.force_offline or (self.api_key is None and self.provider_problem is None)

    @property
    def model_label(self) -> str:
        """What the UI and CLI show as the model in use."""
        return OFFLINE_MODEL_LABEL if self.offline else self.model_name

    @property
    def database_path(self) -> Path:
        """The one SQLite file of the home (agents/store/home.py): checkpoints, transcripts,
        the shop and its refund ledger, and the audit log."""
        return self.home / "shopbot.sqlite"

    @property
    def database_shown(self) -> str:
        """Where the data is, as ShopBot shows it: the SQLite file, or the PostgreSQL
        database as `postgresql://user@host:port/db` (never its password)."""
        if self.database_url is None:
            return str(self.database_path)
        return shown_database_url(self.database_url)

    def secrets(self) -> tuple[str, ...]:
        """Values that must be redacted wherever text is stored or shown."""
        found = [key for key in (self.api_key, self.refused_key, self.server_token) if key]
        user, password = _url_credentials(self.base_url)
        if password:
            found += [password, unquote(password)]
            # httpx sends a URL's userinfo as Basic auth: a proxy's error may echo it bare.
            found.append(_basic_credentials(unquote(user or ""), unquote(password)))
        found += _database_passwords(self.database_url)
        return tuple(dict.fromkeys(found))


def api_key_from(value: str) -> str | None:
    """The key in `value` (surrounding whitespace dropped), None when blank.

    A key holding spaces, line breaks, control or non-ASCII characters is a pasting mistake:
    sent as a header it fails in an error text that quotes it escaped (where exact-match
    redaction misses it) and was retried as "cannot be reached". Refused here, unechoed.
    """
    key = value.strip()
    if not key:
        return None
    if not all("!" <= char <= "~" for char in key):
        raise ConfigurationError(
            "MISTRAL_API_KEY contains spaces, line breaks or other characters an API key "
            "cannot hold; set it to the key alone (or unset it for the offline demo model)."
        )
    return key


def base_url_problem(value: str) -> str | None:
    """Why `value` (MISTRAL_BASE_URL, unset when empty) cannot be an endpoint, or None.

    ChatMistralAI hands it to httpx as it is: a bad port or bracket failed as an "unexpected
    error", and an address of no http(s) scheme was retried four times as "cannot be
    reached". Said here instead, without the value (it may hold a proxy's password).
    """
    if not value:
        return None
    if any(char.isspace() or not char.isprintable() for char in value):
        return (
            "MISTRAL_BASE_URL contains spaces, line breaks or control characters; set it to "
            "the address alone (or unset it for Mistral's own)."
        )
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (read for its check: a port that is no number, or past 65535)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return (
            "MISTRAL_BASE_URL is not an http:// or https:// address with a host (and a port "
            "from 0 to 65535, if any), e.g. https://api.mistral.ai/v1."
        )
    return None


def shown_database_url(url: str) -> str:
    """`postgresql://user@host:port/db` of a connection URL: no password, no options."""
    address = database_address(url)
    if address is None:
        return "postgresql://(an address that cannot be read)"
    user, host, port, dbname = address
    return f"postgresql://{user}@{host}:{port}/{dbname}"


def database_address(url: str) -> tuple[str, str, int, str] | None:
    """(user, host, port, database) of a connection URL, with the defaults libpq uses for
    what it leaves out (the login name, the local socket, 5432, the user's name); None when
    it cannot be read."""
    try:
        parts = urlsplit(url)
        port = parts.port or 5432
    except ValueError:
        return None
    user = unquote(parts.username or "") or _login_name()
    host = parts.hostname or "localhost"
    if ":" in host:
        host = f"[{host}]"  # IPv6
    return user, host, port, unquote(parts.path.lstrip("/")) or user


def _database_passwords(url: str | None) -> list[str]:
    """The password of a connection URL, in its userinfo or as `?password=`, as written
    and decoded."""
    if not url:
        return []
    _user, password = _url_credentials(url)
    found = [password] if password else []
    with contextlib.suppress(ValueError):
        found += parse_qs(urlsplit(url).query).get("password", [])
    return [form for secret in found for form in (secret, unquote(secret))]


def _login_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return "postgres"


def _url_credentials(url: str | None) -> tuple[str | None, str | None]:
    try:
        parts = urlsplit(url) if url else None
    except ValueError:  # a malformed URL: ChatMistralAI will say so itself
        parts = None
    return (parts.username, parts.password) if parts is not None else (None, None)


def _basic_credentials(user: str, password: str) -> str:
    # As httpx.BasicAuth writes them: `user:password` in UTF-8, base64.
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
