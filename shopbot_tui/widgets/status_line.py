"""One line under the conversation: who is answering, what they are doing, and the model.

The side panel says more, and folds away below 90 columns; this line stays at every width:
the live agent and step are what ShopBot exists to show. Cut at its end when the terminal is
narrow, so the model goes first and the agent last.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from agents.backend import AGENT_TITLES, visible
from shopbot_tui.widgets.one_layout import VIRTUAL_SIZE_NO_RELAYOUT


class StatusLine(Static):
    """`▸ Refund agent · checking gate · offline demo`."""

    virtual_size = VIRTUAL_SIZE_NO_RELAYOUT

    def __init__(self, *, agent: str, step: str, model_label: str, offline: bool) -> None:
        # Made with its line: set as it mounted, it laid the screen out again after the first
        # frame.
        self.agent = agent
        self.step = step
        self._model = (model_label, offline)
        super().__init__(self._line(), id="status", markup=False)

    def show_agent(self, agent: str, step: str) -> None:
        if (self.agent, self.step) != (agent, step):
            self.agent, self.step = agent, step
            self._show()

    def show_model(self, label: str, *, offline: bool) -> None:
        if self._model != (label, offline):
            self._model = (label, offline)
            self._show()

    def _show(self) -> None:
        # One row as wide as the conversation whatever it says (chat.tcss): no layout.
        self.update(self._line(), layout=False)

    def _line(self) -> Content:
        label, offline = self._model
        # Theme variables, as the side panel's marks: they follow a change of theme.
        model = (
            (f" {visible(label)} ", "bold reverse $warning")
            if offline
            else (visible(label), "$text-muted")
        )
        return Content.assemble(
            ("▸ ", "$text-accent"),
            (AGENT_TITLES.get(self.agent, self.agent), "bold"),
            " · ",
            (self.step, "bold $text-accent"),
            " ·" if offline else " · ",  # (the badge brings its own space)
            model,
        )
