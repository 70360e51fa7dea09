"""The backend the settings ask for: a ShopBot server's when one is named (`--server`,
SHOPBOT_SERVER_URL), else this machine's home."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agents.errors import ConfigurationError

if TYPE_CHECKING:
    from agents.backend.protocol import Backend
    from agents.settings import Settings


def server_url_problem(url: str) -> str | None:
    """Why `url` cannot be a ShopBot server's address; None when it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"the ShopBot server's address must be an http:// or https:// URL, not {url!r}"
    if parts.username or parts.password:
        return "the ShopBot server's address carries no credentials: SHOPBOT_SERVER_TOKEN does"
    return None


def open_backend(settings: Settings, *, via: str, **local: Any) -> Backend:
    """The fronts' backend, not started. `local`: what only the in-process one takes."""
    if settings.server_url is not None:
        if problem := server_url_problem(settings.server_url):
            raise ConfigurationError(f"SHOPBOT_SERVER_URL / --server: {problem}.")
        from agents.backend.remote import RemoteBackend

        return RemoteBackend(
            settings.server_url, settings.server_token, home=settings.home, via=via
        )
    from agents.backend.local import LocalBackend

    return LocalBackend(settings, via=via, **local)
