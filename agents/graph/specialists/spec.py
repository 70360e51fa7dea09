"""What makes one specialist different from another; the nodes are shared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from agents.graph.tools.handoff import handoffs_from
from agents.graph.validation import GateChain

# At most this many corrections per turn, then a human takes over (the reference's hard cap).
MAX_CORRECTIONS = 2
# Hand-offs in one turn beyond this are ping-pong: the turn ends gracefully instead.
MAX_HANDOFFS_PER_TURN = 3
# The same tool with the same arguments: the 2nd call is refused, the 3rd stops the turn.
REPEAT_LIMIT = 3
# Super-steps per graph per run; the hard brake behind the soft ones above.
RECURSION_LIMIT = 40


@dataclass(frozen=True)
class SpecialistSpec:
    name: str
    ticket_category: str
    schema: type[BaseModel]
    gates: GateChain
    domain_tools: tuple[BaseTool, ...]
    # Complaints are extracted before answering: the review decision needs the sentiment.
    extract_first: bool = False
    review: Literal["complaint"] | None = None

    @property
    def works_on_orders(self) -> bool:
        """Order and refund agents: each turn's extraction names the one order it works on."""
        return "order_id" in self.schema.model_fields

    @property
    def handoff_tools(self) -> list[BaseTool]:
        return handoffs_from(self.name)

    @property
    def tools(self) -> list[BaseTool]:
        """What the answering call may use: its own tools, then the hand-offs."""
        return [*self.domain_tools, *self.handoff_tools]
