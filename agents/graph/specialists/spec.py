"""What makes one specialist different from another; the nodes are shared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langchain_core.tools import BaseTool

from agents.graph.tools.handoff import handoffs_from

# At most this many corrections per turn, then a human takes over (the reference's hard cap).
MAX_CORRECTIONS = 2
# Hand-offs in one turn beyond this are ping-pong: the turn ends gracefully instead.
MAX_HANDOFFS_PER_TURN = 3
# The same tool with the same arguments: the 2nd call is refused, the 3rd stops the turn.
REPEAT_LIMIT = 3
# Tool rounds in one turn, whichever specialists make them: the brake that ends a model's
# endless distinct calls inside the graph (a server's recursion limit is its own, 10 000).
MAX_TOOL_ROUNDS = 8
# Super-steps per graph per run; the hard brake behind the soft ones above.
RECURSION_LIMIT = 40


@dataclass(frozen=True)
class SpecialistSpec:
    name: str
    ticket_category: str
    # Its own tools, whose arguments the gates check (tools/domain.py).
    domain_tools: tuple[BaseTool, ...]
    review: Literal["complaint"] | None = None

    @property
    def works_on_orders(self) -> bool:
        """Order and refund agents: a turn's tools name the one order it works on."""
        return self.review is None

    @property
    def handoff_tools(self) -> list[BaseTool]:
        return handoffs_from(self.name)

    @property
    def tools(self) -> list[BaseTool]:
        """What the answering call may use: its own tools, then the hand-offs."""
        return [*self.domain_tools, *self.handoff_tools]
