"""The tool-calling loop: ask the model, run the tools it asks for, repeat until it answers.

Tool calls are recognised by their presence, not by `finish_reason` (providers disagree on it).
Calls of one reply run concurrently when they are independent (reads, or writes to distinct
paths). A model failure raises `ModelError` out of the loop: the caller apologises and saves
nothing, so an error never becomes an assistant message in the session. Between iterations the
loop asks `should_stop` (the user's /stop) and ends early, keeping what was done; a spending
limit reached before a model call (`SpendLimitReached`) ends the turn the same way.

A turn can outlive one Lambda invocation, and a run of it can die at any moment: a step that
calls tools is recorded by `on_step` before its progress is shown and its tools run (write-ahead),
and by `on_iteration` once its results are in; a turn resumes from such a record (`resume`): a
step recorded without its results has its tools run again, the model is not asked for it again
(a model asked again may say something else). When `time_left` says too little time remains for
another model call, or `tool_time_left` too little for the step's tools, the loop returns a
`suspended` outcome for the caller to continue in a fresh invocation.

With `on_text`, each model call is streamed and the text it writes so far (reasoning left out)
goes to `on_text` as it arrives, the text before tool calls as much as the final answer; what
the turn sends and saves is still the complete reply. A /stop while an answer is being written
ends it there too: the stream asks `should_stop` now and then (every STOP_CHECK_SECONDS, it is a
read of the stop flag), and a stopped stream's text so far is the turn's answer, marked as
stopped (the provider bills what it wrote; its usage never arrives, so it is not counted).

With a `RequestFitter`, each request is made to fit the model's context window before it is
sent (core/budget.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nanobot_lambda.core import texts
from nanobot_lambda.core.budget import RequestFitter
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.journal import pending_tool_calls
from nanobot_lambda.core.model import ModelReply, TextStream, ToolCall, Usage
from nanobot_lambda.core.ports import ChatModel
from nanobot_lambda.core.reasoning import strip_thinking
from nanobot_lambda.core.shorten import keep_head_and_tail
from nanobot_lambda.core.spend import LimitReached, SpendLimitReached
from nanobot_lambda.core.tools import ToolRegistry

logger = logging.getLogger(__name__)

MAX_PARALLEL_TOOLS = 8
_HINT_ICONS = {
    "read_file": "📖",
    "write_file": "✏️",
    "edit_file": "✏️",
    "list_dir": "📁",
    "grep": "🔎",
    "web_search": "🔎",
    "web_fetch": "🌐",
    "cron": "⏰",
    "message": "💬",
    "spawn": "🧵",
}

Progress = Callable[[str], None]
StopCheck = Callable[[], bool]
Record = Callable[["TurnOutcome"], None]
TimeLeft = Callable[[], float]


STOP_CHECK_SECONDS = 1.5  # while an answer streams, how often /stop's flag is read


class StreamStopped(Exception):
    """The user asked to stop while the model was writing; `so_far` is what it had written."""

    def __init__(self, so_far: str) -> None:
        super().__init__("stopped while streaming")
        self.so_far = so_far


def stoppable(on_text: TextStream, should_stop: StopCheck) -> TextStream:
    """`on_text` that raises StreamStopped once `should_stop` says so (asked at most every
    STOP_CHECK_SECONDS, after the text so far was shown)."""
    asked = time.monotonic()

    def show(so_far: str) -> None:
        nonlocal asked
        on_text(so_far)
        if time.monotonic() - asked >= STOP_CHECK_SECONDS:
            asked = time.monotonic()
            if should_stop():
                raise StreamStopped(so_far)

    return show


def visible_text(on_text: TextStream) -> TextStream:
    """`on_text` for the text a user may see: reasoning (`<think>…`) left out, and nothing
    while the reply is only a reasoning block or whitespace so far."""

    def show(so_far: str) -> None:
        start = so_far.lstrip()
        if len(start) < len("<think>") and "<think>".startswith(start):
            return  # perhaps the start of a reasoning block: wait for more
        text = strip_thinking(so_far)
        if text.strip():
            on_text(text)

    return show


def truncate(text: str, limit: int) -> str:
    """At most `limit` characters: the start and a quarter from the end (a framed result's
    closing tag, a traceback), the middle cut with a note."""
    return keep_head_and_tail(text, limit, _cut_note, tail_share=0.25)


def _cut_note(cut: int) -> str:
    return f"\n[… {cut} more characters cut here; read in parts or narrow it …]\n"


def tool_calls_of(step: dict[str, Any]) -> list[ToolCall]:
    """The tool calls of an assistant message, as the model made them."""
    return [
        ToolCall(call["id"], call["function"]["name"], call["function"].get("arguments") or "")
        for call in step.get("tool_calls") or []
    ]


def tool_hint(call: ToolCall) -> str:
    """A one-line hint such as `🔎 grep("lisbon")`, from the call's first string argument, shown
    as text (`texts.literal`: it may be a file name or words the user sent)."""
    arguments = call.json_object() or {}
    first = next((value for value in arguments.values() if isinstance(value, str)), "")
    name = texts.literal(call.name)
    return f'{_HINT_ICONS.get(call.name, "🔧")} {name}("{texts.literal(first, limit=40)}")'


@dataclass
class TurnOutcome:
    reply: str
    new_messages: list[dict[str, Any]]
    tool_calls: int = 0
    iterations: int = 0
    hit_iteration_limit: bool = False
    stopped: bool = False
    suspended: bool = False  # out of time: to be continued from the last recorded iteration
    usage: Usage = field(default_factory=Usage)
    limited: LimitReached | None = None  # a spending limit ended the turn (core/spend.py)


@dataclass(frozen=True)
class Resume:
    """Where a recorded turn left off: its new messages after `iterations` iterations. They
    end with the final answer when the turn recorded it before sending it (see `answer`)."""

    messages: list[dict[str, Any]]
    iterations: int

    @property
    def answer(self) -> str | None:
        """The recorded final answer: a last assistant message without tool calls."""
        last = self.messages[-1] if self.messages else {}
        if last.get("role") == "assistant" and not last.get("tool_calls"):
            return str(last.get("content") or "")
        return None


class AgentLoop:
    def __init__(
        self,
        model: ChatModel,
        tools: ToolRegistry,
        max_iterations: int,
        *,
        tool_result_max_chars: int = 16_000,
        tool_hints: bool = False,
        fitter: RequestFitter | None = None,
    ) -> None:
        self._model = model
        self._fitter = fitter  # keeps each request within the model's context window
        self._tools = tools
        self._max_iterations = max_iterations
        self._tool_result_max_chars = tool_result_max_chars
        self._tool_hints = tool_hints

    def tool_definitions(self) -> list[dict[str, Any]]:
        return self._tools.definitions()

    def run(
        self,
        messages: list[dict[str, Any]],
        *,
        on_progress: Progress | None = None,
        should_stop: StopCheck | None = None,
        resume: Resume | None = None,
        on_step: Record | None = None,
        on_iteration: Record | None = None,
        time_left: TimeLeft | None = None,
        tool_time_left: TimeLeft | None = None,
        on_text: TextStream | None = None,
    ) -> TurnOutcome:
        """Run one turn from `messages` (system, history, user). Returns what to send and save.

        `new_messages` are the assistant and tool messages the turn produced (including those
        of `resume`), ready to save after the user message. `on_progress` receives text to show
        while the turn goes on. `on_step` records a step's tool calls before they run,
        `on_iteration` the step with its results. `time_left` gives the seconds a model call may
        still take in this invocation, `tool_time_left` those a step's tools may take; when
        either is too short, the turn is suspended. `on_text` receives each model call's visible
        text as it is written (see the module's docstring).
        """
        outcome = TurnOutcome(reply="", new_messages=[])
        if resume is not None:
            outcome.new_messages = list(resume.messages)
            outcome.iterations = resume.iterations
            if resume.answer is not None:
                outcome.reply = resume.answer  # recorded before it was sent: finish sending it
                return outcome
        if pending_tool_calls(outcome.new_messages):
            # A step recorded before its tools ran: run them, without asking the model again.
            step = outcome.new_messages[-1]
            if not self._step(step, outcome, on_progress, on_iteration, tool_time_left):
                return self._suspend(outcome)
        definitions = self._tools.definitions()
        stream = None if on_text is None else visible_text(on_text)
        if stream is not None and should_stop is not None:
            stream = stoppable(stream, should_stop)
        while outcome.iterations < self._max_iterations:
            if outcome.iterations and should_stop is not None and should_stop():
                logger.info("turn stopped by the user after %d steps", outcome.iterations)
                return self._finish(outcome, texts.load("stopped"), stopped=True)
            budget = None if time_left is None else time_left()
            if budget is not None and budget <= 0:
                return self._suspend(outcome)
            request = [*messages, *outcome.new_messages]
            if self._fitter is not None:
                request = self._fitter.fit(messages, outcome.new_messages, definitions)
            try:
                reply = self._model.complete(
                    request,
                    definitions,
                    timeout=budget,
                    on_text=stream,
                )
            except StreamStopped as stopped:
                logger.info("turn stopped by the user while the answer was written")
                written = strip_thinking(stopped.so_far)
                said = texts.load("stopped")
                return self._finish(
                    outcome, f"{written}\n\n{said}" if written else said, stopped=True
                )
            except SpendLimitReached as limit:
                # What was done is kept, like a /stop; the reply says why it ends here.
                outcome.limited = limit.reached
                return self._finish(outcome, limit.reached.notice())
            except ModelError:
                if time_left is not None and time_left() <= 0:
                    return self._suspend(outcome)  # cut short by the deadline, not the provider
                raise
            outcome.iterations += 1
            outcome.usage += reply.usage
            if not reply.tool_calls:
                answer = strip_thinking(reply.content or "") or texts.load("empty_reply")
                return self._finish(outcome, answer)
            step = self._step_message(reply)
            outcome.new_messages.append(step)
            outcome.tool_calls += len(reply.tool_calls)
            if on_step is not None:
                on_step(outcome)  # before anything of the step is shown or done
            if not self._step(step, outcome, on_progress, on_iteration, tool_time_left):
                return self._suspend(outcome)

        logger.warning("turn stopped at the tool iteration limit (%d)", self._max_iterations)
        limit_text = texts.render("iteration_limit", limit=self._max_iterations)
        outcome.hit_iteration_limit = True
        return self._finish(outcome, limit_text)

    def _step(
        self,
        step: dict[str, Any],
        outcome: TurnOutcome,
        on_progress: Progress | None,
        on_iteration: Record | None,
        tool_time_left: TimeLeft | None,
    ) -> bool:
        """Show the step's progress and run its tools; False (nothing shown or run: the turn
        goes on in a new invocation, which shows and runs it) when this invocation has too
        little time left for them."""
        calls = tool_calls_of(step)
        if tool_time_left is not None and tool_time_left() < self._tools.seconds_needed(calls):
            return False
        self._report_progress(step, calls, on_progress)
        self._run_tools(calls, outcome)
        if on_iteration is not None:
            on_iteration(outcome)
        return True

    def _suspend(self, outcome: TurnOutcome) -> TurnOutcome:
        logger.info("turn suspended after %d steps: out of time", outcome.iterations)
        outcome.suspended = True
        return outcome

    def _finish(self, outcome: TurnOutcome, text: str, *, stopped: bool = False) -> TurnOutcome:
        outcome.reply = text
        outcome.stopped = stopped
        outcome.new_messages.append({"role": "assistant", "content": text})
        return outcome

    def _report_progress(
        self, step: dict[str, Any], calls: list[ToolCall], on_progress: Progress | None
    ) -> None:
        if on_progress is None:
            return
        lines = []
        if step.get("content"):
            lines.append(str(step["content"]))
        if self._tool_hints:
            lines += [tool_hint(call) for call in calls]
        if lines:
            on_progress("\n".join(lines))

    def _step_message(self, reply: ModelReply) -> dict[str, Any]:
        """The assistant message of a step that calls tools."""
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": strip_thinking(reply.content or "") or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in reply.tool_calls
            ],
        }
        if reply.reasoning_content:
            assistant["reasoning_content"] = reply.reasoning_content
        if reply.thinking_blocks:
            assistant["thinking_blocks"] = list(reply.thinking_blocks)
        return assistant

    def _run_tools(self, calls: list[ToolCall], outcome: TurnOutcome) -> None:
        for call in calls:
            logger.info("tool call", extra={"tool": call.name})
        if len(calls) > 1 and self._independent(calls):
            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_TOOLS, len(calls))) as pool:
                results = list(pool.map(self._tools.execute, calls))
        else:
            results = [self._tools.execute(call) for call in calls]
        for call, result in zip(calls, results, strict=True):
            outcome.new_messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "name": call.name,
                    "content": truncate(result, self._tool_result_max_chars),
                }
            )

    def _independent(self, calls: list[ToolCall]) -> bool:
        """True when no writing call shares its target with another call of the batch."""
        targets: list[tuple[bool, object]] = []
        for call in calls:
            writes = self._tools.mutates(call.name)
            target = (call.json_object() or {}).get("path")
            if writes and not isinstance(target, str):
                return False  # a write with no known target: run everything in order
            targets.append((writes, target))
        for index, (writes, target) in enumerate(targets):
            for other_writes, other_target in targets[index + 1 :]:
                if (writes or other_writes) and target == other_target:
                    return False
        return True


_SAVED_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name", "ts")


# A saved message is one DynamoDB item (400 KB at most): no tool result is saved longer.
MAX_SAVED_TOOL_CHARS = 50_000


def for_saving(
    message: dict[str, Any], max_tool_chars: int = MAX_SAVED_TOOL_CHARS
) -> dict[str, Any]:
    """The message as stored: as the model was shown it, so that later turns send it again
    byte for byte (see core/context.py), but for reasoning, dropped (providers only need it
    within the turn that produced it), and tool results over `max_tool_chars`, shortened."""
    saved = {
        key: value for key, value in message.items() if key in _SAVED_FIELDS or key.endswith("_id")
    }
    content = saved.get("content")
    if saved.get("role") == "tool" and isinstance(content, str) and len(content) > max_tool_chars:
        saved["content"] = keep_head_and_tail(
            content, max_tool_chars, lambda cut: f"\n[… {cut} chars not saved …]\n", 0.25
        )
    return saved
