"""Who may decide refunds, up to what amount: the shop's reviewers file.

`SHOPBOT_HOME/reviewers.toml` names the people whose refund limit differs from the standard
one (the auto-refund limit); everyone else has the standard limit. Without the file nobody
has more, so a refund above the auto-refund limit is escalated, as it always was. Names are
login names locally and the authenticated operators' names under a server.

    # reviewers.toml
    [reviewers]
    dana = "2000.00"   # decides refunds up to 2,000.00
    trainee = "0"      # decides no refund

Read once per process, when ShopBot starts: a change takes effect at the next start.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from agents.errors import ConfigurationError
from agents.reviewer import UNKNOWN
from gates import AUTO_REFUND_LIMIT, authority_problem

FILE_NAME = "reviewers.toml"
# A limit is money: two decimals, and no more than a shop would ever refund at once.
MOST = Decimal("1000000000")


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


@dataclass(frozen=True)
class RefundLimits:
    """Each named reviewer's refund limit; everyone else has `standard`."""

    named: Mapping[str, Decimal] = field(default_factory=dict)
    standard: Decimal = AUTO_REFUND_LIMIT

    def limit_of(self, name: str | None) -> Decimal:
        """The refund limit of `name` (the standard one for anyone not named)."""
        if not name:
            return self.standard
        return self.named.get(_key(name), self.standard)

    def may_not_decide(self, request: Mapping[str, object], name: str | None) -> str | None:
        """Why `name` may not decide `request` (a decision's payload): a refund above their
        limit; None when they may (any question that is not a refund)."""
        if request.get("kind") != "refund_approval":
            return None
        try:
            amount = Decimal(str(request.get("amount")))
        except InvalidOperation:
            return "the refund's amount cannot be read, so nobody can decide it here."
        return authority_problem(amount, name or UNKNOWN, self.limit_of(name))

    @property
    def highest(self) -> Decimal:
        """The most any reviewer may decide: a refund above it can only be escalated."""
        return max([self.standard, *self.named.values()])


def load_refund_limits(home: Path) -> RefundLimits:
    """The limits of `home`'s reviewers file; the standard ones when there is none. A file
    that cannot be read as one raises ConfigurationError naming the file and the problem."""
    path = home / FILE_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return RefundLimits()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"The reviewers file {path} cannot be read: {exc}.") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"The reviewers file {path} is not valid TOML: {exc}.") from exc
    return RefundLimits(named=_named(path, data))


def _named(path: Path, data: Mapping[str, object]) -> dict[str, Decimal]:
    unknown = sorted(set(data) - {"reviewers"})
    if unknown:
        raise ConfigurationError(
            f"The reviewers file {path} has {', '.join(unknown)}: it holds only a "
            "[reviewers] table of names and refund limits."
        )
    table = data.get("reviewers", {})
    if not isinstance(table, dict):
        raise ConfigurationError(f"In {path}, reviewers is a table of names and refund limits.")
    named: dict[str, Decimal] = {}
    for name, value in table.items():
        key = _key(name)
        if not key:
            raise ConfigurationError(f"In {path}, a reviewer has an empty name.")
        named[key] = _limit(path, name, value)
    return named


def _limit(path: Path, name: str, value: object) -> Decimal:
    problem = f'In {path}, the refund limit of {name!r} must be an amount like "2000.00"'
    # (bool is an int in Python: `true` is no amount.)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigurationError(f"{problem}.")
    try:
        limit = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise ConfigurationError(f"{problem}, not {str(value)[:40]!r}.") from exc
    if not limit.is_finite() or limit < 0 or limit > MOST:
        raise ConfigurationError(f"{problem}, from 0 to {MOST:,}.")
    return limit.quantize(Decimal("0.01"))
