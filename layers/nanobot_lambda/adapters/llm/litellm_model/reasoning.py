"""How hard a model thinks: a reasoning effort ("off", "low", "medium", "high"; None: the
provider's default) as litellm's options for that model."""

from __future__ import annotations

from typing import Any

import litellm
from litellm import constants as litellm_constants

from nanobot_lambda.adapters.llm.litellm_model.providers import is_claude, provider_of
from nanobot_lambda.core.model import ToolChoice

# litellm's thinking budgets for its reasoning efforts (Anthropic, Bedrock, Gemini 2.5): they
# count against max_tokens, so they are added to it (LLM_MAX_TOKENS stays the answer's).
THINKING_BUDGETS = {
    "low": litellm_constants.DEFAULT_REASONING_EFFORT_LOW_THINKING_BUDGET,
    "medium": litellm_constants.DEFAULT_REASONING_EFFORT_MEDIUM_THINKING_BUDGET,
    "high": litellm_constants.DEFAULT_REASONING_EFFORT_HIGH_THINKING_BUDGET,
}


def reasoning_options(model: str, effort: str | None, tool_choice: ToolChoice) -> dict[str, Any]:
    """litellm's options for `effort` with `model` (`thinking_budget` is the adapter's own: it is
    added to max_tokens, since litellm caps nothing: "high" is a budget of 4096, and Anthropic
    refuses a max_tokens of 4096 that is not greater than it).

    "off" is what turns thinking off where the model allows it: "none" (Anthropic, Bedrock's
    Claude, gpt-5.1 and later), "disable" (Gemini: a budget of 0, or the lowest level of
    Gemini 3); where it does not, the least it allows ("minimal": gpt-5, Gemini 2.5 Pro; "low":
    o-series). A model litellm knows as one that does not reason gets nothing. A model it does
    not know (a local server's) gets the effort asked, which it may use (vLLM's gpt-oss) or
    ignore, but nothing for "off": there is no common word for it, and such a server may refuse
    one it does not know. Claude refuses thinking with a forced tool call (consolidation), so it
    is not asked to think then.
    """
    if effort is None:
        return {}
    reasons = litellm.supports_reasoning(model)
    forced = tool_choice not in (None, "auto", "none")
    if effort == "off" or (forced and is_claude(model)):
        return {"reasoning_effort": _least_effort(model)} if reasons else {}
    if not reasons and _model_info(model):
        return {}  # litellm knows it: a model that does not reason
    return {"reasoning_effort": effort, "thinking_budget": THINKING_BUDGETS[effort]}


def _least_effort(model: str) -> str:
    provider, name = provider_of(model), model.lower()
    if provider in ("gemini", "vertex_ai"):
        return "minimal" if "gemini-2.5-pro" in name else "disable"
    if provider == "openai":
        info = _model_info(model)
        if info.get("supports_none_reasoning_effort"):
            return "none"
        return "minimal" if info.get("supports_minimal_reasoning_effort") else "low"
    return "none"


def _model_info(model: str) -> dict[str, Any]:
    try:
        return dict(litellm.get_model_info(model))
    except Exception:
        return {}  # not in litellm's model map
