"""Playing flows through the real graph with the offline demo model: throwaway homes, the
result of each try in its home's audit log, and a conversation that ends otherwise than
its flow says failing with what differed."""

from __future__ import annotations

from pathlib import Path

from agents.audit.log import AuditLog, AuditQuery
from agents.eval.flow import Flow, load_flows, parse_flow
from agents.eval.results import SuiteResult
from agents.eval.runner import run_suite
from agents.settings import Settings
from agents.store.shop import ShopData


async def run(flows: list[Flow], tmp_path: Path, k: int = 1, keep: bool = False) -> SuiteResult:
    settings = Settings.from_env(offline=True, home=tmp_path / "never-used")
    suite = await run_suite(flows, k=k, settings=settings, root=tmp_path / "homes", keep=keep)
    assert not (tmp_path / "never-used").exists()
    return suite


async def test_each_try_has_a_throwaway_home_holding_its_result_in_the_audit_log(
    user_home: Path, tmp_path: Path
) -> None:
    suite = await run(load_flows(only=["refund_approved"]), tmp_path, k=2, keep=True)
    [flow] = suite.flows
    assert [t.passed for t in flow.tries] == [True, True]
    assert suite.violations == [] and suite.model == "offline demo"
    for result in flow.tries:
        assert result.home == tmp_path / "homes" / f"refund_approved-{result.index}"
        # Each try paid its own refund: a home shared with the first would say "refunded".
        with ShopData(result.home / "shopbot.sqlite") as shop:
            assert [r.order_id for r in shop.refunds()] == ["ORD-005"]
        with AuditLog(result.home / "shopbot.sqlite") as audit:
            [recorded] = audit.page(AuditQuery(kinds=("eval_result",)))
            decided = audit.page(AuditQuery(kinds=("approval_decided",)))
        assert recorded.thread_id == f"refund_approved-{result.index}"
        assert recorded.detail == {
            "flow": "refund_approved",
            "try": result.index,
            "model": "offline demo",
            "passed": True,
            "failures": [],
            "violations": [],
            "model_calls": result.model_calls,
            "tokens": result.tokens,
        }
        assert decided[0].detail["decided_by"] == "scripted reviewer"
        assert decided[0].detail["via"] == "shopbot eval"
        # Counted on the model's calls: at least an answer per turn, each with its tokens.
        assert result.model_calls >= 2 and result.input_tokens > 0 and result.output_tokens > 0
        assert [turn.kind for turn in result.turns] == ["say", "decide"]
        assert all(turn.seconds > 0 for turn in result.turns)
    assert flow.pass_hat(2) == 1.0


async def test_homes_not_kept_are_removed_after_their_try(user_home: Path, tmp_path: Path) -> None:
    suite = await run(load_flows(only=["order_status"]), tmp_path, k=2)
    assert [t.home for t in suite.tries] == [None, None]
    assert list((tmp_path / "homes").iterdir()) == []


async def test_every_built_in_flow_passes_with_the_offline_demo_model(
    user_home: Path, tmp_path: Path
) -> None:
    suite = await run(load_flows(), tmp_path)
    failed = {t.flow: t.failures for t in suite.tries if not t.passed}
    assert failed == {}
    assert suite.violations == []


WRONG_END = """
customer = "Sam"
[[turns]]
say = "Where is my order ORD-002?"
reply_contains = ["Delivered"]
pending = "refund_approval"
[expect]
refunds = ["ORD-002"]
escalated = true
pending = "complaint_review"
agent = "refund_agent"
reply_lacks = ["In Transit"]
"""


async def test_a_conversation_that_ends_otherwise_fails_with_what_differed(
    user_home: Path, tmp_path: Path
) -> None:
    suite = await run([parse_flow("wrong_end", WRONG_END)], tmp_path, k=2)
    [flow] = suite.flows
    assert flow.passed == 0 and flow.pass_hat(1) == 0.0
    assert list(flow.tries[0].failures) == [
        "turn 1: the reply lacks 'Delivered'",
        "turn 1: nothing pending, expected refund approval pending",
        "end: refunds paid none, expected ORD-002",
        "end: not escalated, expected escalated",
        "end: nothing pending, expected complaint review pending",
        "end: order_agent answers, expected refund_agent",
        "end: the reply shows 'In Transit'",
    ]
    assert flow.tries[0].violations == ()  # wrong, not unsafe


ANOTHER_ORDER = """
customer = "Sam"
[[turns]]
say = "I want a refund for ORD-005, the speaker crackles"
[[turns]]
decide = "approve"
order = "ORD-002"
[[turns]]
say = "Thanks"
[expect]
refunds = []
"""

NOTHING_TO_DECIDE = """
customer = "Sam"
[[turns]]
say = "Where is my order ORD-002?"
[[turns]]
decide = "approve"
"""

DECISION_WAITING = """
customer = "Sam"
[[turns]]
say = "I want a refund for ORD-005, the speaker crackles"
[[turns]]
say = "Hello?"
"""


async def test_the_scripted_reviewer_approves_only_the_order_its_script_names(
    user_home: Path, tmp_path: Path
) -> None:
    suite = await run([parse_flow("another_order", ANOTHER_ORDER)], tmp_path, keep=True)
    [result] = suite.tries
    # A request for ORD-005 where the script expects ORD-002: rejected, and the try fails.
    assert list(result.failures) == [
        "turn 2: the reviewer was asked about a refund of ORD-005, expected ORD-002, "
        "and rejected it"
    ]
    assert result.refunds == () and result.violations == ()
    assert [turn.kind for turn in result.turns] == ["say", "decide"]  # (the script stopped)
    assert result.home is not None
    with AuditLog(result.home / "shopbot.sqlite") as audit:
        [decided] = audit.page(AuditQuery(kinds=("approval_decided",)))
    assert decided.detail["decision"] == "reject"


async def test_a_step_the_conversation_cannot_take_stops_the_try(
    user_home: Path, tmp_path: Path
) -> None:
    flows = [
        parse_flow("nothing_to_decide", NOTHING_TO_DECIDE),
        parse_flow("decision_waiting", DECISION_WAITING),
    ]
    suite = await run(flows, tmp_path)
    nothing, waiting = suite.tries
    assert list(nothing.failures) == [
        "turn 2: nothing waits for a decision (the script says approve)"
    ]
    assert len(waiting.failures) == 1
    assert waiting.failures[0].startswith("turn 2: refused: Thread decision_waiting-1 is waiting")
    assert waiting.turns[-1].status == "refused"
