"""The chat model behind the graph: Mistral when a key is set, else the offline demo model."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from agents.errors import ConfigurationError
from agents.graph.context import RetryBudget
from agents.settings import Settings


def make_model(
    settings: Settings,
    *,
    silence_timeout: float = RetryBudget.silence_timeout,
    offline_token_delay: float = 0.0,
) -> BaseChatModel:
    """`silence_timeout`: seconds without a byte from the provider before a request is given
    up (`RetryBudget.silence_timeout`). `offline_token_delay` paces the offline demo model's
    stream, so a person sees it type."""
    if settings.offline:
        from agents.models.offline.demo_model import OfflineDemoModel

        return OfflineDemoModel(token_delay=offline_token_delay)
    if settings.provider_problem is not None:
        raise ConfigurationError(settings.provider_problem)
    from agents.models.mistral import StreamingChatMistral

    # The endpoint is not passed: ChatMistralAI reads MISTRAL_BASE_URL itself.
    # max_retries=1 means one attempt: our own loop (agents/models/provider.py) retries, honouring
    # Retry-After, instead of the client's fixed 4-10 s waits that only cover transport errors.
    return StreamingChatMistral(
        model=settings.model_name,
        api_key=settings.api_key,
        temperature=0,
        # httpx's connect, read, write and pool timeouts: per read, not per answer (our
        # own deadline in provider.py bounds the whole answer).
        timeout=silence_timeout,
        max_retries=1,
    )
