"""Token budgets: how much history a session keeps unsummarised, and what a request may hold.

History is sized by tokens, not by a count of messages. Consolidation is due when the
unconsolidated history passes `HistoryBudget.max_tokens` (or, as a backstop, `max_messages`),
and it keeps the newest exchanges that fill at most half of it: so the next consolidation comes
only once the history has grown by half the budget again (the hysteresis that keeps summaries
rare), and the prefix of the history stays byte-identical from turn to turn until then, which is
what a provider's prompt cache serves. By default the history may fill half of the request
budget (`default_history_tokens`).

`RequestFitter` runs before each model call, so a request never fails with a context-length
error: when the request would not fit the model's window, the turn's largest tool results are
cut, newest first (a result cut before it is first sent keeps the history byte-stable), and only
then, as a last resort, the oldest history is left out of that request (it stays in the session,
unsummarised, and is summarised in its turn). Summarising the oldest exchanges, the better
remedy, happens first, at the start of a turn whose request would not fit or whose session holds
more than HISTORY_WINDOW messages: see functions/agent_turn/turn_request.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nanobot_lambda.core.context import for_model
from nanobot_lambda.core.ports import TokenCounter
from nanobot_lambda.core.sessions import Message, align_to_user_turn

logger = logging.getLogger(__name__)

# Per message, what a chat template adds around its content (role markers), in tokens.
MESSAGE_OVERHEAD_TOKENS = 4
CUT_MARKER = "\n[… {cut} more characters cut to fit the model's context window; read in parts]"
MIN_KEPT_CHARS = 200  # what is kept at least of a cut tool result
FIT_ROUNDS = 8
# The default history budget's ceiling, however large the window: every turn sends the history
# again (cached, but not free), and past this, fewer consolidations are not worth it.
MAX_DEFAULT_HISTORY_TOKENS = 24_000


def default_history_tokens(request_budget: int) -> int:
    """HISTORY_MAX_TOKENS unset: half the request budget, at most MAX_DEFAULT_HISTORY_TOKENS.
    The other half holds the system prompt, the tools and the turn's own messages. (A quarter,
    as before, left a model of 32,768 tokens 3,400 tokens between consolidations: with long
    answers, a summary every other turn.)"""
    return min(MAX_DEFAULT_HISTORY_TOKENS, request_budget // 2)


def upper_bound(messages: list[Message], tools: list[dict[str, Any]] | None) -> int:
    """More tokens than the request can have, without a tokenizer: a token is at least one byte
    of the text (plus each message's template overhead)."""
    size = len(json.dumps([messages, tools or []], ensure_ascii=False).encode())
    return size + MESSAGE_OVERHEAD_TOKENS * len(messages)


@dataclass(frozen=True)
class HistoryBudget:
    counter: TokenCounter
    max_tokens: int  # unconsolidated history past which consolidation is due
    max_messages: int  # a backstop: consolidation is due past this many messages too
    # What one consolidation may summarise: its request must fit the model's window too.
    max_summarised_tokens: int = 1_000_000

    def tokens(self, messages: list[Message]) -> int:
        """The history's tokens as it is sent (runtime blocks included)."""
        return self.counter.count([for_model(message) for message in messages])

    def over(self, messages: list[Message], unconsolidated: int) -> bool:
        """Whether the session's unconsolidated history (`messages`, of `unconsolidated` in
        all) has outgrown the budget."""
        if unconsolidated > self.max_messages:
            return True
        if upper_bound(messages, None) <= self.max_tokens:
            return False  # too small to be over, however it is counted
        return self.tokens(messages) > self.max_tokens

    def summarised_until(self, messages: list[tuple[int, Message]], target: int) -> int:
        """Where one consolidation of `messages` (up to `target`) stops: at `target`, or earlier,
        at a user message, when summarising them all would not fit `max_summarised_tokens` (a
        later consolidation takes the rest). At least the first exchange is taken."""
        total, fitting = 0, None  # fitting: the furthest user message the slice may end at
        for seq, message in messages:
            if seq >= target:
                break
            if message.get("role") == "user" and seq > messages[0][0]:
                if total > self.max_summarised_tokens:
                    return fitting or seq
                fitting = seq
            total += self.tokens([message]) + MESSAGE_OVERHEAD_TOKENS
        return fitting if total > self.max_summarised_tokens and fitting else target

    def keep_from(self, messages: list[tuple[int, Message]], end: int) -> int:
        """Where the kept part of a consolidation starts: the oldest user message from which the
        newest messages fill at most half the budget (and half the message backstop); `end`
        (nothing kept) when even the newest exchange is larger. Never more: what is kept counts
        towards the next consolidation, and an exchange kept over half the budget would leave
        less than half of it to grow before the next one (a summary every turn or two)."""
        kept_tokens = 0
        start = end
        for kept, (seq, message) in enumerate(reversed(messages), start=1):
            kept_tokens += self.tokens([message]) + MESSAGE_OVERHEAD_TOKENS
            if kept_tokens > self.max_tokens // 2 or kept > self.max_messages // 2:
                break
            if message.get("role") == "user":
                start = seq
        return start


class RequestFitter:
    """Keeps each request within `max_tokens`: the model's context window less room for the
    reply (see the module's docstring)."""

    def __init__(self, counter: TokenCounter, max_tokens: int | Callable[[], int]) -> None:
        """`max_tokens`: a number, or what gives it for each request (the chat's model, chosen
        with /model, has a window of its own)."""
        self._counter = counter
        self._max_tokens = max_tokens

    @property
    def max_tokens(self) -> int:
        return self._max_tokens if isinstance(self._max_tokens, int) else self._max_tokens()

    def tokens(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> int:
        bound = upper_bound(messages, tools)
        return bound if bound <= self.max_tokens else self._counter.count(messages, tools)

    def fits(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> bool:
        return self.tokens(messages, tools) <= self.max_tokens

    def fit(
        self,
        request: list[Message],
        turn: list[Message],
        tools: list[dict[str, Any]] | None,
    ) -> list[Message]:
        """The messages to send: `request` (system, history, the user's message) and `turn` (what
        the turn added), made to fit. Tool results of `turn` are cut in place, so the turn
        records, saves and sends again what the model was shown."""
        over = self.tokens([*request, *turn], tools) - self.max_tokens
        rounds = 0
        while over > 0 and rounds < FIT_ROUNDS and self._cut_a_tool_result(turn, over):
            rounds += 1
            over = self.tokens([*request, *turn], tools) - self.max_tokens
        if over <= 0:
            return [*request, *turn]
        system, history, user = request[:1], request[1:-1], request[-1:]
        while over > 0 and history:
            history = align_to_user_turn(history[1:])
            over = self.tokens([*system, *history, *user, *turn], tools) - self.max_tokens
        logger.warning(
            "request over the context window: older history left out of this request",
            extra={"history_sent": len(history), "over_tokens": max(over, 0)},
        )
        return [*system, *history, *user, *turn]

    @staticmethod
    def _cut_a_tool_result(turn: list[Message], over_tokens: int) -> bool:
        """Cut the largest tool result of the turn (the newest of equals) by about
        `over_tokens`; False when none is left to cut."""
        candidates = [
            (len(message["content"]), index)
            for index, message in enumerate(turn)
            if message.get("role") == "tool"
            and isinstance(message.get("content"), str)
            and len(message["content"]) > MIN_KEPT_CHARS + len(CUT_MARKER)
        ]
        if not candidates:
            return False
        _, index = max(candidates)
        content: str = turn[index]["content"]
        # A token is about four characters of prose; cut a little more, to fit in few rounds.
        keep = max(MIN_KEPT_CHARS, len(content) - (over_tokens * 4 + 400))
        cut = len(content) - keep
        logger.info("tool result cut to fit the context window", extra={"cut_chars": cut})
        turn[index] = {**turn[index], "content": content[:keep] + CUT_MARKER.format(cut=cut)}
        return True
