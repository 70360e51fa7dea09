"""One line under the conversation: who is answering, what they are doing, and the model.

The side panel says more, and folds away below 90 columns; this line stays at every width:
the live agent and step are what ShopBot exists to show. Cut at its end when the terminal is
narrow, so the model goes first and the agent last.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from agents.backend import AGENT_TITLES, visible


class StatusLine(Static):
    """`▸ Refund agent · checking gate · offline demo`."""

    def __init__(self, *, model_label: str, offline: bool) -> None:
        super().__init__(id="status", markup=False)
        self.agent = ""
        self.step = ""
        self._model = (model_label, offline)

    def on_mount(self) -> None:
        self._show()

    def show_agent(self, agent: str, step: str) -> None:
        if (self.agent, self.step) != (agent, step):
            self.agent, self.step = agent, step
            self._show()

    def show_model(self, label: str, *, offline: bool) -> None:
        self._model = (label, offline)
        self._show()

    def _show(self) -> None:
        label, offline = self._model
        # Theme variables, as the side panel's marks: they follow a change of theme.
        model = (
            (f" {visible(label)} ", "bold reverse $warning")
            if offline
            else (visible(label), "$text-muted")
        )
        self.update(
            Content.assemble(
                ("▸ ", "$text-accent"),
                (AGENT_TITLES.get(self.agent, self.agent), "bold"),
                " · ",
                (self.step, "bold $text-accent"),
                " ·" if offline else " · ",  # (the badge brings its own space)
                model,
            )
        )
