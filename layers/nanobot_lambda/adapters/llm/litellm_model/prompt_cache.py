"""Prompt-cache breakpoints for the models that cache a prefix only where the request says so."""

from __future__ import annotations

from typing import Any


def uses_prompt_cache_markers(model: str) -> bool:
    """Claude models (Anthropic, Bedrock, Vertex, OpenRouter) cache a prefix only where told
    to; OpenAI-style providers cache automatically and may reject the markers."""
    return "claude" in model.lower() or model.lower().startswith("anthropic/")


MAX_CACHE_BREAKPOINTS = 4  # Anthropic rejects a request with more blocks marked
CACHE_CONTROL = {"type": "ephemeral"}
_MARKABLE_BLOCKS = {"text", "image_url", "file", "document"}  # carried by litellm to the wire


def mark_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with cache breakpoints (`cache_control`) where a Claude model should cache:

    1. the system message: tools and system prompt, stable across turns;
    2. the end of the history, the message before the last user message (the current one; the
       tool loop adds its assistant and tool messages after it): the next turn reads it back;
    3. the last message (the user message, later the newest tool result), so the next call of
       the turn, and the next turn, find all of this request cached.

    A provider caches only where told, and a breakpoint hits only if everything before it is
    byte-identical: the history is sent as first sent (`core/context.py`). Marked messages are
    copies; the caller's dicts, saved to the session afterwards, are never changed. A message
    that cannot carry a marker on the wire (an assistant message with only tool calls, empty
    text) hands its breakpoint to the nearest earlier one that can. At most
    MAX_CACHE_BREAKPOINTS in all, counting markers the messages already carry.
    """
    marked = list(messages)
    budget = MAX_CACHE_BREAKPOINTS - sum(_markers(message) for message in messages)
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    systems = [index for index, message in enumerate(messages) if message.get("role") == "system"]
    wanted = [  # by value, should the budget not cover all three
        systems[-1] if systems else None,
        len(messages) - 1,
        users[-1] - 1 if users else None,
    ]
    done: set[int] = set()
    for target in wanted:
        if budget <= 0 or target is None:
            continue
        index = _markable_at_or_before(marked, target, done)
        if index is None:
            continue
        marked[index] = _with_marker(marked[index])
        done.add(index)
        budget -= 1
    return marked


def _markable_at_or_before(
    messages: list[dict[str, Any]], index: int, done: set[int]
) -> int | None:
    """The nearest message at or before `index` that can carry a marker and has none; a system
    message only as its own target (the end of a history that is only a system prompt is
    covered by the system breakpoint already)."""
    for candidate in range(index, -1, -1):
        message = messages[candidate]
        if candidate in done or _markers(message):
            return None  # already a breakpoint there: nothing to add
        if message.get("role") == "system" and candidate != index:
            return None
        if _can_carry_marker(message):
            return candidate
    return None


def _can_carry_marker(message: dict[str, Any]) -> bool:
    role, content = message.get("role"), message.get("content")
    if role == "tool":
        return True  # message-level marker: litellm puts it on the tool_result block
    if isinstance(content, str):
        return bool(content.strip())  # litellm drops (assistant) or replaces (user) blank text
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        block = content[-1]
        kind = block.get("type")
        if kind == "text":
            return bool(str(block.get("text") or "").strip())
        return role != "assistant" and kind in _MARKABLE_BLOCKS
    return False  # None: an assistant message with only tool calls, whose marker litellm drops


def _with_marker(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` marked: on its last content block, or (a tool message) itself."""
    content = message.get("content")
    if message.get("role") == "tool":
        return {**message, "cache_control": dict(CACHE_CONTROL)}
    if isinstance(content, str):
        block = {"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}
        return {**message, "content": [block]}
    blocks: list[Any] = list(content or [])  # a list: checked by _can_carry_marker
    blocks[-1] = {**blocks[-1], "cache_control": dict(CACHE_CONTROL)}
    return {**message, "content": blocks}


def _markers(message: dict[str, Any]) -> int:
    """How many breakpoints `message` carries already (the caller's own)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    in_blocks = sum(isinstance(block, dict) and "cache_control" in block for block in blocks)
    return int("cache_control" in message) + in_blocks
