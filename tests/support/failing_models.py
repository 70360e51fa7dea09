"""Demo-model variants whose calls fail the way a provider or a store does."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field, PrivateAttr

from agents.models.offline.demo_model import OfflineDemoModel


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


class MisreadingDemoModel(OfflineDemoModel):
    """The demo model whose tool calls read an order id as another, however often the gates
    say so (`misread`: the id written, or the id it repairs to -> the id it reads): a model
    that stays wrong."""

    misread: dict[str, str] = Field(default_factory=dict)

    def answer(self, messages: Any, tools: Any, tool_choice: Any) -> AIMessage:
        reply = super().answer(messages, tools, tool_choice)
        for call in reply.tool_calls:
            order_id = call["args"].get("order_id")
            if order_id is not None:
                call["args"]["order_id"] = self.misread.get(order_id, order_id)
        return reply
