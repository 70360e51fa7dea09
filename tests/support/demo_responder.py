"""A fake Mistral responder that thinks like the offline demo model.

Each request the real `ChatMistralAI` client sends to the strict fake server is read back
into LangChain messages and answered by `OfflineDemoModel`'s rules, then sent on the wire as
Mistral would send it. Whole conversations then run over HTTP through the real client, with
every request checked by the fake's rules, without scripting each answer by hand.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agents.models.offline.demo_model import OfflineDemoModel
from tests.support.fake_mistral import Answer, text, tool_call, tool_calls


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


def _message(wire: dict[str, Any]) -> BaseMessage:
    role, content = wire["role"], _text(wire.get("content"))
    if role == "system":
        return SystemMessage(content)
    if role == "user":
        return HumanMessage(content)
    if role == "tool":
        return ToolMessage(content, tool_call_id=wire["tool_call_id"], name=wire.get("name"))
    calls = [
        {
            "name": call["function"]["name"],
            "args": json.loads(call["function"]["arguments"] or "{}"),
            "id": call["id"],
            "type": "tool_call",
        }
        for call in wire.get("tool_calls") or []
    ]
    return AIMessage(content, tool_calls=calls)


class DemoResponder:
    """`fake_mistral.respond_with(DemoResponder())`; `requests` counts what it answered."""

    def __init__(self) -> None:
        self.model = OfflineDemoModel()
        self.requests = 0

    def __call__(self, body: dict[str, Any]) -> Answer:
        self.requests += 1
        messages = [_message(m) for m in body["messages"]]
        answer = self.model.answer(messages, body.get("tools") or [], body.get("tool_choice"))
        calls = answer.tool_calls
        if len(calls) == 1:
            return tool_call(calls[0]["name"], calls[0]["args"])
        if calls:
            return tool_calls([(c["name"], c["args"]) for c in calls])
        return text(_text(answer.content))
