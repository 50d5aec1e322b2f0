"""Model names as litellm reads them: which provider a model belongs to, and which are Claude's."""

from __future__ import annotations


def provider_of(model: str) -> str:
    """litellm's provider prefix ("anthropic" of "anthropic/claude-…"; bare names are OpenAI)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def is_claude(model: str) -> bool:
    return "claude" in model.lower()
