"""What an eval found: each try of each flow, their pass^k, cost and latency, and the
safety violations, as the table shows them and as `--json` records them whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.eval.flow import Flow
from agents.eval.metrics import mean, median, p95, pass_hat
from agents.eval.observed import TurnRecord
from agents.eval.violations import Violation


@dataclass(frozen=True)
class TryResult:
    """One try of a flow: one conversation in its own throwaway home."""

    flow: str
    index: int
    thread_id: str
    # The model as the fronts name it ("offline demo", "mistral-small-latest").
    model: str
    failures: tuple[str, ...]
    violations: tuple[Violation, ...]
    turns: tuple[TurnRecord, ...]
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    refunds: tuple[str, ...] = ()
    escalated: bool = False
    pending: str = "none"
    agent: str = ""
    home: Path | None = None

    @property
    def passed(self) -> bool:
        """Ended as expected, and safely: a violation fails its try as well as the run."""
        return not self.failures and not self.violations

    @property
    def provider_failed(self) -> bool:
        return any(turn.failed == "provider" for turn in self.turns)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def audit_detail(self, model: str) -> dict[str, Any]:
        """The `eval_result` event of the try, in its home's audit log."""
        return {
            "flow": self.flow,
            "try": self.index,
            "model": model,
            "passed": self.passed,
            "failures": list(self.failures),
            "violations": [v.to_json() for v in self.violations],
            "model_calls": self.model_calls,
            "tokens": self.tokens,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "try": self.index,
            "thread_id": self.thread_id,
            "passed": self.passed,
            "failures": list(self.failures),
            "violations": [v.to_json() for v in self.violations],
            "model_calls": self.model_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "end": {
                "refunds": list(self.refunds),
                "escalated": self.escalated,
                "pending": self.pending,
                "agent": self.agent,
            },
            "turns": [turn.to_json() for turn in self.turns],
            "home": str(self.home) if self.home else None,
        }


@dataclass
class FlowResult:
    flow: Flow
    tries: list[TryResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(t.passed for t in self.tries)

    def pass_hat(self, k: int) -> float:
        return pass_hat(len(self.tries), self.passed, k)

    @property
    def latencies(self) -> list[float]:
        return [turn.seconds for t in self.tries for turn in t.turns]

    @property
    def calls_per_conversation(self) -> float | None:
        return mean([t.model_calls for t in self.tries])

    @property
    def tokens_per_conversation(self) -> float | None:
        return mean([t.tokens for t in self.tries])

    def to_json(self, k: int) -> dict[str, Any]:
        return {
            "name": self.flow.name,
            "title": self.flow.title,
            "source": self.flow.source,
            "tries": len(self.tries),
            "passed": self.passed,
            "pass_hat": {str(j): self.pass_hat(j) for j in range(1, k + 1)},
            "model_calls_per_conversation": self.calls_per_conversation,
            "tokens_per_conversation": self.tokens_per_conversation,
            "turn_seconds_median": median(self.latencies),
            "turn_seconds_p95": p95(self.latencies),
            "runs": [t.to_json() for t in self.tries],
        }


@dataclass
class SuiteResult:
    model: str
    k: int
    flows: list[FlowResult] = field(default_factory=list)
    # The folder the throwaway homes were kept in (None: removed when the run ended).
    kept_in: Path | None = None

    @property
    def tries(self) -> list[TryResult]:
        return [t for flow in self.flows for t in flow.tries]

    @property
    def violations(self) -> list[tuple[TryResult, Violation]]:
        return [(t, v) for t in self.tries for v in t.violations]

    def mean_pass_hat(self, k: int) -> float | None:
        """pass^k over the suite: the mean of the flows' (τ-bench's average over tasks)."""
        return mean([flow.pass_hat(k) for flow in self.flows])

    @property
    def latencies(self) -> list[float]:
        return [s for flow in self.flows for s in flow.latencies]

    def to_json(self) -> dict[str, Any]:
        tries = self.tries
        return {
            "model": self.model,
            "k": self.k,
            "passed": not self.violations,
            "summary": {
                "flows": len(self.flows),
                "conversations": len(tries),
                "pass_hat": {str(j): self.mean_pass_hat(j) for j in range(1, self.k + 1)},
                "model_calls": sum(t.model_calls for t in tries),
                "tokens": sum(t.tokens for t in tries),
                "turn_seconds_median": median(self.latencies),
                "turn_seconds_p95": p95(self.latencies),
            },
            "violations": [
                {"flow": t.flow, "try": t.index, **v.to_json()} for t, v in self.violations
            ],
            "flows": [flow.to_json(self.k) for flow in self.flows],
            "homes": str(self.kept_in) if self.kept_in else None,
        }
