"""Views of the conversation that keep Mistral's history rules, and repairs after a failed turn.

Mistral rejects a history where a tool call is unanswered, a user message follows a tool
message, or a system message is not first. Our state is kept valid by construction; these
helpers build the narrower views we send for extraction and mend a turn that was cut short.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from agents.safety.redaction import redact_data

# An extraction reads the recent exchange, not the whole conversation: bounded prompt tokens.
EXTRACTION_WINDOW = 12
# A customer message the in-process runner already wrote to the transcript carries this id
# prefix and its line's number (runner/turn_closing.py); a server's input carries none.
CUSTOMER_LINE_PREFIX = "customer-line-"


def text_of(message: BaseMessage) -> str:
    """The visible text of a message, whatever shape its content has."""
    return message.text if isinstance(message.text, str) else str(message.text)


def customer_words(messages: Sequence[BaseMessage]) -> str:
    """Everything the customer wrote in `messages` (the gates tell a mistyped order id from a
    misread one by it)."""
    return "\n".join(text_of(m) for m in messages if isinstance(m, HumanMessage))


def latest_customer_words(messages: Sequence[AnyMessage]) -> str:
    """What the customer wrote in their latest message ("" if none): the last message of
    `dialogue_view`, which always ends on the customer."""
    return customer_words(dialogue_view(messages)[-1:])


def is_final_reply(message: BaseMessage) -> bool:
    return isinstance(message, AIMessage) and not message.tool_calls and bool(text_of(message))


def dialogue_view(
    messages: Sequence[AnyMessage], window: int = EXTRACTION_WINDOW
) -> list[BaseMessage]:
    """Customer messages and assistant replies only (no tool traffic), ending on the customer.

    What an extraction needs to read, and always valid to send: it starts and ends with a
    user message and holds no tool calls to answer.
    """
    view: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, HumanMessage):
            view.append(HumanMessage(content=text_of(m)))
        elif is_final_reply(m):
            view.append(AIMessage(content=text_of(m)))
    view = view[-window:]
    while view and not isinstance(view[0], HumanMessage):
        view.pop(0)
    while view and not isinstance(view[-1], HumanMessage):
        view.pop()
    return view


HANDOFF_PREFIX = "transfer_to_"


def without_handoffs(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The conversation as a specialist's model reads it: hand-off calls and their answers
    left out (they are routing, not conversation, and cost tokens on every later call).

    Only assistant messages made of hand-offs alone are dropped, with their tool answers, so
    what remains still pairs every call with its answer.
    """
    dropped: set[str] = set()
    kept: list[AnyMessage] = []
    for message in messages:
        if (
            isinstance(message, AIMessage)
            and message.tool_calls
            and all(c["name"].startswith(HANDOFF_PREFIX) for c in message.tool_calls)
        ):
            dropped.update(c["id"] or "" for c in message.tool_calls)
            continue
        if isinstance(message, ToolMessage) and message.tool_call_id in dropped:
            continue
        kept.append(message)
    return kept


def last_ai_message(messages: Sequence[AnyMessage]) -> AIMessage | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def answered_ids(messages: Sequence[AnyMessage]) -> set[str]:
    """Ids of tool calls answered after the last assistant message."""
    ids: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            ids.add(message.tool_call_id)
        else:
            break
    return ids


MALFORMED = "__malformed__"


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def storable_reply(reply: AIMessage) -> AIMessage:
    """The model's message as we keep it. A call with malformed arguments becomes a call with
    no arguments, remembered as malformed: we answer it with an error, and the history we
    replay to the provider stays valid JSON. A key the model repeats (a proxy that leaked it)
    is redacted wherever it is, text or tool call, before it reaches the state.

    Streaming hides malformed JSON (LangChain parses partial JSON leniently, `{"id": X` ->
    `{}`), so the raw arguments the provider sent are checked too.
    """
    raw = {
        item.get("id"): item.get("function", {}).get("arguments")
        for item in reply.additional_kwargs.get("tool_calls", [])
        if isinstance(item, dict)
    }
    malformed: dict[str, str] = {}
    calls: list[ToolCall] = []
    for call in reply.tool_calls:
        sent = raw.get(call["id"])
        if isinstance(sent, str) and not _is_json_object(sent):
            malformed[call["id"] or ""] = f"not a JSON object: {sent[:80]}"
            calls.append(ToolCall(name=call["name"], args={}, id=call["id"]))
        else:
            calls.append(call)
    for index, bad in enumerate(reply.invalid_tool_calls):
        call_id = bad.get("id") or f"bad{index:06d}"  # nine characters, as Mistral wants
        malformed[call_id] = (bad.get("error") or "invalid arguments").splitlines()[0]
        calls.append(ToolCall(name=bad.get("name") or "unknown_tool", args={}, id=call_id))
    if malformed:
        reply = AIMessage(
            content="",
            tool_calls=calls,
            id=reply.id,
            response_metadata={**reply.response_metadata, "malformed_calls": malformed},
            usage_metadata=reply.usage_metadata,
        )
    return _without_secrets(reply)


def _without_secrets(reply: AIMessage) -> AIMessage:
    # The raw arguments (`additional_kwargs`) and a malformed call's text are kept too.
    said = {
        "content": reply.content,
        "tool_calls": reply.tool_calls,
        "invalid_tool_calls": reply.invalid_tool_calls,
        "additional_kwargs": reply.additional_kwargs,
        "response_metadata": reply.response_metadata,
    }
    kept = redact_data(said)
    return reply if kept == said else reply.model_copy(update=kept)


def unanswered_calls(messages: Sequence[AnyMessage]) -> list[ToolCall]:
    """Tool calls of the last assistant message still waiting for their tool message.

    A call stored as malformed (see `storable_reply`) carries its error under `MALFORMED`.
    """
    if not messages or not isinstance(messages[-1], (AIMessage, ToolMessage)):
        return []
    ai = last_ai_message(messages)
    if ai is None:
        return []
    done = answered_ids(messages)
    malformed = ai.response_metadata.get("malformed_calls", {})
    return [
        ToolCall(name=call["name"], args={MALFORMED: malformed[call["id"]]}, id=call["id"])
        if call.get("id") in malformed
        else call
        for call in ai.tool_calls
        if call.get("id") not in done
    ]


def tool_answer(call: ToolCall, content: str, *, error: bool = False) -> ToolMessage:
    return ToolMessage(
        content=content,
        tool_call_id=call["id"] or "",
        name=call["name"],
        status="error" if error else "success",
    )


def refuse_pending(messages: Sequence[AnyMessage], why: str) -> list[ToolMessage]:
    """An error answer, saying `why`, to every call still waiting: Mistral insists on one."""
    return [tool_answer(call, why, error=True) for call in unanswered_calls(messages)]


def repair_tail(messages: Sequence[AnyMessage], note: str) -> list[BaseMessage]:
    """Messages to append so a turn cut short leaves a history the next turn can build on."""
    repair: list[BaseMessage] = [
        *refuse_pending(messages, "Not executed: the turn was stopped before this call ran.")
    ]
    tail = repair[-1] if repair else (messages[-1] if messages else None)
    if isinstance(tail, ToolMessage):
        repair.append(AIMessage(content=note))
    return repair
