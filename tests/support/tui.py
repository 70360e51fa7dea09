"""Shared helpers for the TUI tests (no tests here): apps on a temporary SHOPBOT_HOME driven
by the offline demo model, and ways to wait for the engine without sleeping."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr
from rich.console import Console
from textual.command import CommandList
from textual.content import Content
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input
from textual.worker import WorkerCancelled

from agents.audit.log import AuditEvent
from agents.backend.local import LocalBackend
from agents.graph.context import RetryBudget
from agents.models.offline.demo_model import OfflineDemoModel
from agents.models.offline.local_model import LocalChatModel
from agents.runner.engine import ShopBotEngine
from agents.settings import Settings
from shopbot_tui.app import ShopBotApp
from shopbot_tui.chat.approval_screen import ApprovalScreen
from shopbot_tui.chat.screen import ChatScreen
from shopbot_tui.widgets.conversation import AssistantReply, CustomerMessage, SystemNote
from tests.support.engine import FAST_RETRY
from tests.support.failing_models import service_unavailable

SIZE = (120, 40)


class RecordingApp(ShopBotApp):
    """The real app, remembering its notifications and bells for assertions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notices: list[tuple[str, str, str]] = []
        self.bells = 0

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        self.notices.append((severity, title, message))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def bell(self) -> None:
        self.bells += 1


def make_app(
    home: Path,
    *,
    thread_id: str | None = "t-test",
    customer: str | None = "Sam",
    model: Any = None,
    retry: RetryBudget | None = None,
    engine_class: type[ShopBotEngine] = ShopBotEngine,
) -> RecordingApp:
    settings = Settings(home=home, force_offline=True)

    def factory() -> ShopBotEngine:
        return engine_class(settings, model=model or OfflineDemoModel(), retry=retry)

    return RecordingApp(
        settings, thread_id=thread_id, customer=customer, backend_factory=local(settings, factory)
    )


def local(settings: Settings, engine: Callable[[], ShopBotEngine]) -> Callable[[], LocalBackend]:
    """The app's backend, in process, with the engine `engine` makes."""
    return lambda: LocalBackend(settings, via="app", engine_factory=engine)


def engine_of(app: ShopBotApp) -> ShopBotEngine | None:
    """The engine behind the app's local backend, once it runs (for reading its stores)."""
    backend = app.backend
    assert isinstance(backend, LocalBackend)
    return backend.engine


def mistral_app(
    home: Path,
    *,
    thread_id: str | None = "t-test",
    customer: str | None = "Alex",
    retry: RetryBudget = FAST_RETRY,
) -> RecordingApp:
    """The app as a person runs it with a key: settings from the environment (the
    `fake_mistral` fixture points MISTRAL_BASE_URL and MISTRAL_API_KEY at the fake) and the
    engine's own ChatMistralAI client; only the retry waits are shortened."""
    settings = Settings.from_env(home=home)
    assert not settings.offline, "use the fake_mistral fixture"

    def factory() -> ShopBotEngine:
        return ShopBotEngine(settings, retry=retry)

    return RecordingApp(
        settings, thread_id=thread_id, customer=customer, backend_factory=local(settings, factory)
    )


async def settle(pilot: Pilot[Any]) -> None:
    """Until no worker runs and every message they posted has been handled."""
    for _ in range(100):
        # An exclusive worker replaced by a newer one (the chat rereads what changed) is
        # cancelled: the newer one is waited for on the next round.
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(worker.is_running for worker in pilot.app.workers):
            await pilot.pause()
            return
    raise AssertionError("workers did not settle")


async def wait_until(pilot: Pilot[Any], condition: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await pilot.pause()
    raise AssertionError(f"timed out waiting for {what}")


async def palette_command(pilot: Pilot[Any], words: str) -> None:
    """Run the command palette's first command matching `words`, as typed."""
    await pilot.press("ctrl+p", *words)
    await wait_until(
        pilot,
        lambda: pilot.app.screen.query_one(CommandList).option_count > 0,
        "the palette to find the command",
    )
    await pilot.press("enter")


def chat(app: ShopBotApp) -> ChatScreen:
    return app.chat


async def send(pilot: Pilot[Any], text: str, *, wait: bool = True) -> None:
    """Put `text` in the message box and press Enter, as a paste and a key would."""
    box = pilot.app.chat.query_one("#message", Input)
    box.value = text
    box.focus()
    await pilot.press("enter")
    if wait:
        await settle(pilot)


async def begin_conversation(tmp_path: Path, thread_id: str, customer: str | None) -> None:
    """`thread_id` asks "Where is ORD-002?" for `customer`, in an app that then quits."""
    first = make_app(tmp_path, thread_id=thread_id, customer=customer)
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Where is ORD-002?")


def visible_text(widget: Any) -> str:
    rendered = widget.render()
    return rendered.plain if isinstance(rendered, Content) else str(rendered)


def painted_text(app: ShopBotApp, widget: Widget) -> str:
    """What the screen shows where `widget` is, line by line, as a person would read it (the
    compositor's output: Textual's own tests read it the same way)."""
    region = widget.region
    strips = app.screen._compositor.render_strips()[region.y : region.bottom]
    return "\n".join(strip.crop(region.x, region.right).text for strip in strips)


def frame_text(app: ShopBotApp) -> str:
    """The whole frame as the terminal shows it, the screens under a modal included (what
    `App.export_screenshot` renders), as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text(styles=False)


def transcript_on_screen(app: ShopBotApp) -> list[tuple[str, str]]:
    """(role, text) of every line of the conversation widget, in order."""
    lines: list[tuple[str, str]] = []
    for widget in app.chat.query("#chat-log > *"):
        if isinstance(widget, CustomerMessage):
            lines.append(("customer", visible_text(widget)))
        elif isinstance(widget, AssistantReply):
            lines.append(("assistant", widget.source))
        elif isinstance(widget, SystemNote):
            lines.append(("note", visible_text(widget)))
    return lines


def notes(app: ShopBotApp) -> list[str]:
    return [text for role, text in transcript_on_screen(app) if role == "note"]


def replies(app: ShopBotApp) -> list[str]:
    return [text for role, text in transcript_on_screen(app) if role == "assistant"]


def audit_kinds(app: ShopBotApp, thread_id: str) -> list[str]:
    return [event.kind for event in audit_events(app, thread_id)]


def audit_details(app: ShopBotApp, thread_id: str, kind: str) -> list[dict[str, Any]]:
    return [event.detail for event in audit_events(app, thread_id) if event.kind == kind]


def audit_events(app: ShopBotApp, thread_id: str) -> list[AuditEvent]:
    """The thread's audit events, oldest first."""
    from agents.audit.log import AuditQuery

    engine = engine_of(app)
    assert engine is not None
    return list(reversed(engine.audit.page(AuditQuery(thread_id=thread_id), limit=1000)))


class GatedModel(OfflineDemoModel):
    """The demo model, holding every call after the first `free_calls` until the test opens
    the gate (`held` is set once a call waits there); with `pause_mid_reply`, a streamed reply
    also stops after its first piece until `resume()`."""

    pause_mid_reply: bool = False
    free_calls: int = 0
    _gate: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _mid: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _held: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _calls: int = PrivateAttr(default=0)
    _admitted: bool = PrivateAttr(default=False)  # this call already passed the gate

    @property
    def held(self) -> asyncio.Event:
        return self._held

    async def _wait_for_gate(self) -> None:
        self._calls += 1
        if self._calls > self.free_calls:
            self._held.set()
            await self._gate.wait()

    def open(self) -> None:
        self._gate.set()

    def hold_from_now(self) -> None:
        """Close the gate again for every call from here on."""
        self.free_calls = self._calls
        self._gate.clear()
        self._held.clear()

    def resume(self) -> None:
        self._mid.set()

    def pause_next_reply(self) -> None:
        self._mid.clear()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # `run_manager` named: LangChain passes it (and so the request to stream) only then.
        await self._wait_for_gate()
        self._admitted = True  # a streamed reply goes on through `_astream`: one call
        try:
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        finally:
            self._admitted = False

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        if not self._admitted:
            await self._wait_for_gate()
        pieces = 0
        async for chunk in super()._astream(messages, *args, **kwargs):
            yield chunk
            pieces += bool(chunk.text)
            if self.pause_mid_reply and pieces == 1:
                await self._mid.wait()


class ProviderDownModel(LocalChatModel):
    """A provider that answers every call with HTTP 503."""

    @property
    def _llm_type(self) -> str:
        return "provider-down"

    def answer(self, messages: Any, tools: Any, tool_choice: Any) -> AIMessage:
        raise service_unavailable()


def iter_notices(app: RecordingApp, severity: str) -> Iterator[str]:
    for level, title, message in app.notices:
        if level == severity:
            yield f"{title}: {message}"


@pytest.fixture(autouse=True)
def instant_approval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approval shortcuts work at once in tests (a person gets a short arming delay), and
    Enter confirms a chosen option however soon it comes."""
    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY", 0.0)
    monkeypatch.setattr(ApprovalScreen, "CONFIRM_GAP", 0.0)
