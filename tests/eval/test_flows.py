"""Flow files: the built-in flows, a shop's own, and files that cannot be run as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.eval.flow import FlowError, builtin_flows, load_flows, parse_flow

# The list: every one of these is a built-in flow.
REQUIRED = {
    "order_status",
    "refund_approved",
    "refund_rejected",
    "misread_order_id",
    "over_limit_refund",
    "another_customers_order",
    "angry_complaint",
    "handoff_and_back",
    "prompt_injection",
    "changes_mind",
}

REFUND = """
customer = "Sam"
[[turns]]
say = "I want a refund for ORD-005, the speaker crackles"
pending = "refund_approval"
[[turns]]
decide = "approve"
order = " ord-005"
[expect]
refunds = ["ORD-005"]
reply_contains = ["REF-ORD-005"]
"""


def test_the_built_in_flows_ship_with_the_package_and_state_their_ends() -> None:
    flows = {flow.name: flow for flow in builtin_flows()}
    assert set(flows) >= REQUIRED
    assert flows["refund_approved"].expect.refunds == ("ORD-005",)
    assert flows["refund_rejected"].expect.refunds == ()
    assert flows["over_limit_refund"].expect.escalated
    assert flows["angry_complaint"].turns[-1].decide == "escalate_to_senior"
    # Each decision the reviewer makes on a refund names the order it expects.
    for flow in flows.values():
        assert flow.turns[0].say, flow.name
        for turn in flow.turns:
            if turn.decide in ("approve", "reject"):
                assert turn.order, flow.name


def test_a_flow_is_parsed_with_its_defaults_and_its_order_ids_spelled_canonically() -> None:
    flow = parse_flow("mine", REFUND, "shop/mine.toml")
    assert (flow.title, flow.customer, flow.source) == ("mine", "Sam", "shop/mine.toml")
    assert flow.turns[1].order == "ORD-005"
    assert flow.turns[0].pending == "refund_approval" and flow.turns[1].pending is None
    assert (flow.expect.escalated, flow.expect.pending, flow.expect.agent) == (False, "none", None)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # A misspelt key would expect nothing and pass: refused by name.
        (
            '[[turns]]\nsay = "hi"\nreply_contain = ["x"]',
            "turns[1].reply_contain: unknown key",
        ),
        ('[[turns]]\nsay = "hi"\n[expect]\nrefund = []', "expect.refund: unknown key"),
        ('[[turns]]\ndecide = "approve"', "turns[1]: the first turn is the customer's"),
        ('[[turns]]\nsay = "hi"\n[[turns]]\ndecide = "yes"', "turns[2].decide: must be one of"),
        ('[[turns]]\nsay = "hi"\ndecide = "approve"', "turns[1]: give either `say`"),
        ('[[turns]]\nsay = "hi"\n[expect]\nrefunds = ["ORD-1O"]', "is not an order id"),
        ('[[turns]]\nsay = "hi"\n[expect]\nescalated = "yes"', "expect.escalated: must be"),
        ('[[turns]]\nsay = "hi"\npending = "approval"', "turns[1].pending: must be one of"),
        ('[[turns]]\nsay = "hi"\norder = "ORD-001"', "only a refund decision names an order"),
        ('[[turns]]\nsay = "hi"\n[expect]\nagent = "boss"', "expect.agent: must be one of"),
        ("title = 'x'", "turns: at least one [[turns]] table is needed"),
        ("turns = [", "not valid TOML"),
    ],
)
def test_a_flow_that_cannot_be_run_as_written_is_refused_naming_file_and_key(
    text: str, said: str
) -> None:
    with pytest.raises(FlowError) as refused:
        parse_flow("mine", text, "shop/mine.toml")
    assert str(refused.value).startswith("flow mine (shop/mine.toml): ")
    assert said in str(refused.value)


def test_a_shops_flows_are_added_from_a_folder_and_names_stay_unique(tmp_path: Path) -> None:
    (tmp_path / "big_refund.toml").write_text(REFUND, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a flow", encoding="utf-8")
    names = [flow.name for flow in load_flows([tmp_path])]
    assert names[-1] == "big_refund" and set(names) >= REQUIRED
    assert [f.name for f in load_flows([tmp_path], only=["big_refund", "order_status"])] == [
        "big_refund",
        "order_status",
    ]
    (tmp_path / "order_status.toml").write_text(REFUND, encoding="utf-8")
    with pytest.raises(FlowError, match="flow order_status is defined twice"):
        load_flows([tmp_path])


def test_unknown_flows_and_folders_without_flows_are_refused(tmp_path: Path) -> None:
    with pytest.raises(FlowError, match="unknown flow 'nope'; flows: "):
        load_flows(only=["nope"])
    with pytest.raises(FlowError, match="holds no flow files"):
        load_flows([tmp_path])
    with pytest.raises(FlowError, match="not a folder"):
        load_flows([tmp_path / "missing"])
    (tmp_path / "Bad Name.toml").write_text(REFUND, encoding="utf-8")
    with pytest.raises(FlowError, match="the file name must be"):
        load_flows([tmp_path])
