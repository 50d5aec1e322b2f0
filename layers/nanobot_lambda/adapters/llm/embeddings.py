"""Text to vectors through litellm, for hybrid recall (`EMBEDDING_MODEL`, core/hybrid_recall.py).

Any litellm embedding model: OpenAI's text-embedding-3-* (with `EMBEDDING_DIMENSIONS`, e.g. 256,
to keep the index small), Bedrock Titan v2, Gemini, a local Ollama (`EMBEDDING_API_BASE`).
Credentials: the chat model's key and base URL when both models belong to the same provider (so
one provider's key is never sent to another), otherwise litellm's own provider variables
(OPENAI_API_KEY…); `EMBEDDING_API_BASE` sets the base URL. The price is litellm's
(`response_cost`, else `completion_cost` for the model), counted against the spending limits by
`MeteredEmbedder`. litellm is imported on the first call, so building this costs nothing.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

from nanobot_lambda.adapters.llm.transcription import provider_of
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import Embeddings
from nanobot_lambda.core.ports import Embedder
from nanobot_lambda.settings import AgentSettings

EMBEDDING_TIMEOUT_SECONDS = 20.0  # a query's embedding is on the reply path: never long


class LitellmEmbedder:
    def __init__(self, model: str, settings: AgentSettings) -> None:
        self._model = model
        self._options: dict[str, Any] = {
            "timeout": min(EMBEDDING_TIMEOUT_SECONDS, settings.llm_timeout_seconds),
            "max_retries": min(1, settings.llm_num_retries),
        }
        if settings.embedding_dimensions:
            self._options["dimensions"] = settings.embedding_dimensions
        key, base = None, settings.embedding_api_base
        if provider_of(model) == provider_of(settings.llm_model):
            key = settings.llm_api_key
            base = base or settings.llm_api_base
        if base:
            self._options["api_base"] = base
        if key is not None:
            self._options["api_key"] = key.get_secret_value()

    def embed(self, texts: Sequence[str]) -> Embeddings:
        importlib.import_module("nanobot_lambda.adapters.llm.litellm_model")  # configures litellm
        import litellm

        try:
            response = litellm.embedding(model=self._model, input=list(texts), **self._options)
            vectors = tuple(_unit(_vector(item)) for item in response.data)
        except Exception as error:
            # The type and status only: provider errors may quote the input.
            status = getattr(error, "status_code", None)
            kind = type(error).__name__
            raise ModelError(f"embedding failed ({kind}, status {status})") from None
        return Embeddings(vectors, self._model, _cost(response, self._model))


def _vector(item: Any) -> list[float]:
    values = item["embedding"] if isinstance(item, dict) else item.embedding
    if not isinstance(values, list) or not values:
        raise ValueError("an embedding is not a list of numbers")
    return [float(value) for value in values]


def _unit(vector: list[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return tuple(value / norm for value in vector)


def _cost(response: Any, model: str) -> float | None:
    """litellm's price for the call, when it knows one for the model."""
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if isinstance(cost, int | float):
        return float(cost)
    import litellm

    try:
        return float(litellm.completion_cost(completion_response=response, model=model))
    except Exception:  # a model litellm has no price for
        return None


def embedder_for(settings: AgentSettings) -> Embedder | None:
    """The configured embedder, or None when `EMBEDDING_MODEL` is unset (recall by words)."""
    if not settings.embedding_model:
        return None
    return LitellmEmbedder(settings.embedding_model, settings)
