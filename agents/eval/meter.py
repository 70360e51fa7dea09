"""Model calls and tokens of one conversation, counted by a LangChain callback handler on the
model: every request the graph makes (extractions, answers, summaries, retries) passes
through it, whatever the model (Mistral, the offline demo, a test's)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult


class UsageMeter(BaseCallbackHandler):
    """Counts requests started and the tokens their answers report (`usage_metadata`:
    Mistral's `usage`, the offline model's estimate)."""

    def __init__(self) -> None:
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls += 1

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    self.input_tokens += int(usage.get("input_tokens", 0))
                    self.output_tokens += int(usage.get("output_tokens", 0))

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def metered(model: BaseChatModel, meter: UsageMeter) -> None:
    """Let `meter` count every call of `model`. A model's own callbacks run for each of its
    calls, through `bind_tools` and `with_structured_output` too (the bound runnables call
    this very model), so nothing in the graph has to pass a config along."""
    existing = model.callbacks
    if existing is None:
        model.callbacks = [meter]
    elif isinstance(existing, list):
        model.callbacks = [*existing, meter]
    else:  # a callback manager: it takes handlers of its own
        existing.add_handler(meter, inherit=True)
