"""What a gate returns: `(True, cleaned_data)` or `(False, error_text)`.

The error text is written for the model to act on. It is a `GateError`, a `str` that
also says what the engine should do next, so the text stays the single source of truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any


class Remedy(IntEnum):
    """What a failed gate asks for, mildest first; combined failures take the strongest."""

    # The model misread the conversation: feed the error back and extract again.
    CORRECT = 1
    # The customer has not given what is needed yet: ask them, no correction.
    ASK_CUSTOMER = 2
    # A business rule says no: tell the customer, run no tool.
    INFORM = 3
    # Only a human may decide: hand the case to a colleague.
    ESCALATE = 4


class GateError(str):
    """Error text for the model, carrying the remedy and a stable code per failed rule."""

    remedy: Remedy
    codes: tuple[str, ...]

    def __new__(cls, text: str, remedy: Remedy, codes: tuple[str, ...] = ()) -> GateError:
        error = super().__new__(cls, text)
        error.remedy = remedy
        error.codes = codes
        return error

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep remedy and codes through pickling (checkpoints, multiprocessing).
        return (GateError, (str(self), self.remedy, self.codes))

    @classmethod
    def combine(cls, errors: list[GateError]) -> GateError:
        """All failures reported together, as the reference does: joined with ' | '."""
        return cls(
            " | ".join(errors),
            max(error.remedy for error in errors),
            tuple(code for error in errors for code in error.codes),
        )


Cleaned = dict[str, Any]
GateResult = tuple[bool, Cleaned | GateError]


def passed(data: Mapping[str, Any]) -> GateResult:
    return True, dict(data)


def failed(text: str, remedy: Remedy, code: str) -> GateResult:
    return False, GateError(text, remedy, (code,))
