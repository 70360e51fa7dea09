"""Where ShopBot keeps its data and which model it talks to, read from the environment.

Imports nothing heavy: the TUI reads settings before LangChain is loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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

    @classmethod
    def from_env(cls, *, offline: bool = False, home: Path | None = None) -> Settings:
        key = os.environ.get("MISTRAL_API_KEY", "").strip() or None
        return cls(
            home=home or default_home(),
            model_name=os.environ.get("SHOPBOT_MODEL", "").strip() or DEFAULT_MODEL,
            api_key=key,
            force_offline=offline,
        )

    @property
    def offline(self) -> bool:
        """True when the offline demo model drives the graph."""
        return self.force_offline or self.api_key is None

    @property
    def model_label(self) -> str:
        """What the UI and CLI show as the model in use."""
        return OFFLINE_MODEL_LABEL if self.offline else self.model_name

    @property
    def checkpoints_path(self) -> Path:
        return self.home / "checkpoints.sqlite"

    @property
    def shop_path(self) -> Path:
        return self.home / "shop.sqlite"

    @property
    def audit_path(self) -> Path:
        return self.home / "audit.sqlite"

    @property
    def threads_path(self) -> Path:
        return self.home / "threads.sqlite"

    def secrets(self) -> tuple[str, ...]:
        """Values that must be redacted wherever text is stored or shown."""
        return (self.api_key,) if self.api_key else ()
