"""Who answered a decision: the person logged in where ShopBot runs, and the front they used.

Stored with every decision in the audit log, so a refund shows who let it through. The login
name is the operating system's (`getpass`): ShopBot has no accounts of its own, and a name
typed into the app would be no more trustworthy than the account that runs it.
"""

from __future__ import annotations

import functools
import getpass
from dataclasses import dataclass

NAME_LENGTH = 64
UNKNOWN = "unknown user"


@functools.cache
def login_name() -> str:
    """The login name of the account running ShopBot, or "unknown user". Looked up once: it
    may ask the password database, and it does not change while ShopBot runs."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no USER/LOGNAME and no password entry (some containers)
        return UNKNOWN
    return " ".join(name.split())[:NAME_LENGTH] or UNKNOWN


@dataclass(frozen=True)
class Reviewer:
    name: str
    # The front the decision came through: "app", "command line".
    via: str

    @classmethod
    def here(cls, via: str) -> Reviewer:
        return cls(login_name(), via)

    def audit_detail(self) -> dict[str, str]:
        return {"decided_by": self.name, "via": self.via}
