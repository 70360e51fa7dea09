"""Demo-model variants whose calls fail the way a provider or a store does."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from agents.offline.demo_model import OfflineDemoModel


def service_unavailable() -> httpx.HTTPStatusError:
    """What `ChatMistralAI` raises for an HTTP 503 from the provider."""
    request = httpx.Request("POST", "https://provider.invalid/v1/chat/completions")
    response = httpx.Response(503, request=request, text="upstream overloaded")
    return httpx.HTTPStatusError("503 Service Unavailable", request=request, response=response)


class FlakyDemoModel(OfflineDemoModel):
    """The demo model with a switch that makes the provider answer HTTP 503; it keeps what
    each call was sent."""

    down: bool = False
    _sent: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def sent(self) -> list[list[BaseMessage]]:
        return self._sent

    def answer(self, messages: Any, tools: Any, tool_choice: Any) -> AIMessage:
        self._sent.append(list(messages))
        if self.down:
            raise service_unavailable()
        return super().answer(messages, tools, tool_choice)


class LockedStoreModel(OfflineDemoModel):
    """Answers as if a store the turn needs were locked by another program."""

    def answer(self, messages: Any, tools: Any, tool_choice: Any) -> AIMessage:
        raise sqlite3.OperationalError("database is locked")
