"""The decision the open thread waits for: shown in the side panel and the footer, asked in
the approval modal (one at a time), and answered by resuming the graph as a turn."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shopbot_tui.widgets.side_panel import step_text

# The side panel's step while another process (a window, `shopbot`) answers on the thread.
ANSWERING_ELSEWHERE = "answering in another window"

log = logging.getLogger("shopbot.tui")

if TYPE_CHECKING:
    from agents.backend import ApprovalRequest
    from shopbot_tui.chat.approval_screen import ApprovalScreen
    from shopbot_tui.chat.parts import ApprovalChat


def checks_asked_about(request: ApprovalRequest) -> list[tuple[str, bool, str]]:
    """`(gate, ok, detail)` of the checks that led to `request`, as the request records them."""
    return [
        (str(check.get("gate", "?")), bool(check.get("ok")), str(check.get("detail", "")))
        for check in request.payload.get("gates") or []
    ]


class ApprovalFlow:
    """Asks the person on `chat` for the decisions its threads wait for."""

    def __init__(self, chat: ApprovalChat) -> None:
        self._chat = chat
        # The approval dialog open or about to open (it is pushed after the next refresh):
        # the app says every notification in it meanwhile (ShopBotApp.notify).
        self.dialog: ApprovalScreen | None = None
        # A dialog closed because its request was answered elsewhere: nothing to say of it.
        self._withdrawn: ApprovalScreen | None = None

    def wait_for(
        self,
        pending: ApprovalRequest | None,
        *,
        agent: str,
        answering: bool = False,
        elsewhere: bool = False,
    ) -> None:
        """The open thread now waits for `pending` (asked at once), or for nothing; `agent`
        is its active one, `answering` when a turn of this app runs on it, `elsewhere` when
        one of another process does."""
        chat = self._chat
        chat.pending = pending
        if pending is not None:
            step = step_text("waiting_for_approval")
        elif elsewhere:
            step = ANSWERING_ELSEWHERE
        else:
            step = step_text("answering" if answering else "idle")
        chat.show_agent(agent, step)
        if pending is not None:
            self.ask(pending)

    def ask(self, request: ApprovalRequest) -> None:
        """Open the approval modal, unless one is open already; its answer resumes the graph."""
        chat = self._chat
        if not chat.panel.gates and request.thread_id == chat.thread_id:
            # Reopened (after a restart, say): the checks that led here, from the request.
            chat.panel.show_gates(checks_asked_about(request))
        if self.dialog is not None:
            return

        # (Imported here: not needed for the first paint.)
        from shopbot_tui.chat.approval_screen import ApprovalScreen

        backend = chat.backend
        self.dialog = modal = ApprovalScreen(
            request,
            # Named in the dialog before the decision: the backend's, recorded with it.
            chat.records.reviewer,
            reread=backend.decision_as_it_stands if backend is not None else None,
            on_reread=self._read_again,
            may_not_decide=backend.may_not_decide(request) if backend is not None else None,
        )

        def decided(decision: str | None) -> None:
            self.dialog = None
            if modal.typed:
                self._keep_typed(modal.typed)
            if modal is self._withdrawn:
                self._withdrawn = None
            elif decision is None:
                chat.notices.decision_still_pending()
            elif request.thread_id in chat.busy:
                chat.notices.decision_not_sent(request.thread_id)
            elif (backend := chat.backend) is not None:
                chat.turns.start(
                    request.thread_id,
                    # The request shown: one asked anew meanwhile is not decided by it.
                    lambda: backend.decide(
                        request.thread_id, decision, request_id=request.request_id
                    ),
                    decision=decision,
                )

        # After the chat's next refresh: what led to the question is painted behind it
        # (a screen under a modal is not laid out again).
        chat.call_after_refresh(chat.app.push_screen, modal, decided)

    def _read_again(self, request: ApprovalRequest) -> None:
        """The open dialog read its request again: kept as the one pending, and a check
        that no longer holds (the order refunded since) shown in the side panel too."""
        chat = self._chat
        asked = chat.pending
        if asked is None or request.thread_id != chat.thread_id:
            return
        if asked.request_id != request.request_id:
            return
        chat.pending = request
        if checks_asked_about(request) != checks_asked_about(asked):
            chat.panel.show_gates(checks_asked_about(request))

    async def check_answered_elsewhere(self) -> None:
        """The registry no longer lists the open thread as waiting: if the decision shown
        was answered elsewhere (another window, `shopbot resume`), its dialog closes and the
        thread is shown as it is now, instead of offering a question nobody can answer."""
        chat = self._chat
        asked, thread_id, backend = chat.pending, chat.thread_id, chat.backend
        if asked is None or backend is None or thread_id in chat.busy:
            return
        try:
            now = await backend.pending_decision(thread_id)
        except Exception:  # (said where it matters: when the thread is opened again)
            log.exception("reading the decision %s waits for failed", thread_id)
            return
        if chat.pending is not asked or chat.thread_id != thread_id or thread_id in chat.busy:
            return  # moved on meanwhile
        if now is not None and now.request_id == asked.request_id:
            return
        from agents.backend import latest_decision

        who = await latest_decision(backend.audit_page, thread_id, asked.request_id)
        if chat.pending is not asked or chat.thread_id != thread_id:
            return  # moved on meanwhile
        if (dialog := self.dialog) is not None:
            self._withdrawn = dialog
            dialog.dismiss(None)
        chat.notices.decided_elsewhere(who)
        await chat.open_thread(thread_id, chat.customer)

    def _keep_typed(self, typed: str) -> None:
        """What the person typed as the modal opened goes back into the message box."""
        self._chat.message_input.insert_text_at_cursor(typed)
        self._chat.notices.typed_kept()
