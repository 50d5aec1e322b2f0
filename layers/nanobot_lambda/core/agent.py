"""The tool-calling loop: ask the model, run the tools it asks for, repeat until it answers.

Tool calls are recognised by their presence, not by `finish_reason` (providers disagree on it).
Calls of one reply run concurrently when they are independent (reads, or writes to distinct
paths). A model failure raises `ModelError` out of the loop: the caller apologises and saves
nothing, so an error never becomes an assistant message in the session. Between iterations the
loop asks `should_stop` (the user's /stop) and ends early, keeping what was done; a spending
limit reached before a model call (`SpendLimitReached`) ends the turn the same way.

A turn can outlive one Lambda invocation, and a run of it can die at any moment: a step that
calls tools is recorded by `on_step` before its progress is shown and its tools run (write-ahead),
and by `on_iteration` as its calls answer (each result recorded as it comes, kept in the order
of the calls); a turn resumes from such a record (`resume`): the calls of a step that have no
recorded result are run (again, if a run died while they ran), the others are not, and the model
is not asked for the step again (a model asked again may say something else). When `time_left`
says too little time remains for another model call, the loop returns a `suspended` outcome for
the caller to continue in a fresh invocation. A step's calls run in batches that fit
`tool_time_left`: what they may take (`Tool.seconds_needed`) counted as they run, the longest of
calls run together, the sum of calls run one after the other. The calls that do not fit are left
to a fresh invocation, and the invocation that resumes the step runs at least one of them,
however long it may take: every invocation gets on with the step, so no step waits for an
invocation long enough for all of its calls (which may never come).

With `on_text`, each model call is streamed and the text it writes so far (reasoning left out)
goes to `on_text` as it arrives, the text before tool calls as much as the final answer; what
the turn sends and saves is still the complete reply. A /stop while an answer is being written
ends it there too: the stream asks `should_stop` now and then (every STOP_CHECK_SECONDS, it is a
read of the stop flag), and a stopped stream's text so far is the turn's answer, marked as
stopped (the provider bills what it wrote; its usage never arrives, so it is not counted).

With a `RequestFitter`, each request is made to fit the model's context window before it is
sent (core/budget.py).

With a `gate`, every call is ruled on before it runs (core/approvals.py): a call the gate holds
with a result is not run and the model gets that result (a denial); a call it holds without one
waits for a person: the step's other calls run, and the loop returns an `awaiting` outcome,
recorded, for the caller to ask and end the invocation; the press resumes the turn there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Generic

from nanobot_lambda.core import texts
from nanobot_lambda.core.budget import RequestFitter
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.journal import open_step
from nanobot_lambda.core.model import CompletionRequest, ModelReply, TextStream, ToolCall, Usage
from nanobot_lambda.core.ports import ChatModel
from nanobot_lambda.core.reasoning import strip_thinking
from nanobot_lambda.core.shorten import keep_head_and_tail
from nanobot_lambda.core.spend import LimitReached, SpendLimitReached
from nanobot_lambda.core.tools import C, ToolRegistry

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
Finished = Callable[[list[tuple[int, str]]], None]  # (a call's index in its step, its result)


@dataclass(frozen=True)
class Held:
    """A call the gate does not let run now: the model is told `result` instead (a denial), or,
    with None, the call waits for a person's approval."""

    result: str | None = None


# The gate: (the job's context, a call, the turn's messages so far) -> None (run it) or Held.
Gate = Callable[[Any, ToolCall, list[dict[str, Any]]], Held | None]


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
    awaiting: bool = False  # a call waits for a person's approval: the turn ends here for now


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


class AgentLoop(Generic[C]):
    """One job's loop: its model, its tools (made for the job: functions/agent_turn/turn_deps.py,
    `AgentLoops`), and how far it may go. `run` passes the job's context to every tool call."""

    def __init__(
        self,
        model: ChatModel,
        tools: ToolRegistry[C],
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
        ctx: C,
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
        gate: Gate | None = None,
    ) -> TurnOutcome:
        """Run one turn from `messages` (system, history, user), its tools called with `ctx`.
        Returns what to send and save.

        `new_messages` are the assistant and tool messages the turn produced (including those
        of `resume`), ready to save after the user message. `on_progress` receives text to show
        while the turn goes on. `on_step` records a step's tool calls before they run,
        `on_iteration` the step with its results so far, as they come. `time_left` gives the
        seconds a model call may still take in this invocation, `tool_time_left` those a step's
        tools may take; when either is too short, the turn is suspended (see the module's
        docstring). `on_text` receives each model call's visible text as it is written. `gate`
        rules on each call before it runs (see the module's docstring).
        """
        outcome = TurnOutcome(reply="", new_messages=[])
        if resume is not None:
            outcome.new_messages = list(resume.messages)
            outcome.iterations = resume.iterations
            if resume.answer is not None:
                outcome.reply = resume.answer  # recorded before it was sent: finish sending it
                return outcome
        # A step recorded before all of its calls answered: run the others, without asking the
        # model again; at least one of them, whatever it may take (see the module's docstring).
        at = open_step(outcome.new_messages)
        if at is not None and not self._step(
            ctx, at, outcome, on_progress, on_iteration, tool_time_left, True, gate
        ):
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
            sent = [*messages, *outcome.new_messages]
            if self._fitter is not None:
                sent = self._fitter.fit(messages, outcome.new_messages, definitions)
            try:
                reply = self._model.complete(
                    CompletionRequest(sent, definitions, timeout=budget, on_text=stream)
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
            at = len(outcome.new_messages) - 1
            if not self._step(
                ctx, at, outcome, on_progress, on_iteration, tool_time_left, False, gate
            ):
                return self._suspend(outcome)

        logger.warning("turn stopped at the tool iteration limit (%d)", self._max_iterations)
        limit_text = texts.render("iteration_limit", limit=self._max_iterations)
        outcome.hit_iteration_limit = True
        return self._finish(outcome, limit_text)

    def _step(
        self,
        ctx: C,
        at: int,
        outcome: TurnOutcome,
        on_progress: Progress | None,
        on_iteration: Record | None,
        tool_time_left: TimeLeft | None,
        resumed: bool,
        gate: Gate | None = None,
    ) -> bool:
        """Run the calls of the step at `at` in the turn's messages that have no result yet,
        in batches that fit `tool_time_left`, recording each result as it comes; True once all
        have answered, False when some are left for a new invocation. A step `resumed` from an
        earlier invocation runs at least one call here. The step's progress is shown before its
        first call runs: not when none runs here, nor again once one has answered. The `gate`
        rules on the calls first: those it denies get their result, those that wait for a
        person are left (the outcome `awaiting`, False returned once the others answered)."""
        step = outcome.new_messages[at]
        calls = tool_calls_of(step)
        results = recorded_results(calls, outcome.new_messages[at + 1 :])
        shown = any(result is not None for result in results)

        def finished(done: list[tuple[int, str]]) -> None:
            for index, result in done:
                results[index] = self._result_message(calls[index], result)
            # The step's results in the order of its calls, whichever answered first.
            outcome.new_messages[at + 1 :] = [result for result in results if result is not None]
            if on_iteration is not None and None in results:
                on_iteration(outcome)  # the step with its results so far

        held = self._held(ctx, gate, calls, results, outcome.new_messages)
        if denied := [(index, text) for index, text in held.items() if text is not None]:
            finished(denied)
        asking = {index for index, text in held.items() if text is None}
        must_run = resumed
        while waiting := [
            index for index, result in enumerate(results) if result is None and index not in asking
        ]:
            batch = self._batch([calls[index] for index in waiting], tool_time_left, must_run)
            if not batch:
                left = (len(waiting), len(calls))
                logger.info("%d of the step's %d calls left to a new invocation", *left)
                return False
            if not shown:
                self._report_progress(step, calls, on_progress)
                shown = True
            must_run = False
            self._run_tools(ctx, list(zip(waiting, batch, strict=False)), finished)
        if asking:
            outcome.awaiting = True
            return False
        if on_iteration is not None:
            on_iteration(outcome)
        return True

    def _held(
        self,
        ctx: C,
        gate: Gate | None,
        calls: list[ToolCall],
        results: list[dict[str, Any] | None],
        messages: list[dict[str, Any]],
    ) -> dict[int, str | None]:
        """The gate's answers for the calls with no result yet that it holds, by index: the
        result the model gets instead, or None for a call that waits for a person."""
        if gate is None:
            return {}
        held: dict[int, str | None] = {}
        for index, call in enumerate(calls):
            if results[index] is None and (answer := gate(ctx, call, messages)) is not None:
                held[index] = answer.result
        return held

    def _batch(
        self, waiting: list[ToolCall], tool_time_left: TimeLeft | None, at_least_one: bool
    ) -> list[ToolCall]:
        """The most of the `waiting` calls, from the first on, that can run in the time left
        for tools, run as `_run_tools` would run them. `at_least_one`: the first one whatever
        it may take, and those that would run with it in no longer."""
        if tool_time_left is None:
            return waiting
        left = tool_time_left()
        if at_least_one:
            left = max(left, self._seconds_needed(waiting[:1]))
        count = 0
        while count < len(waiting) and self._seconds_needed(waiting[: count + 1]) <= left:
            count += 1
        return waiting[:count]

    def _seconds_needed(self, calls: list[ToolCall]) -> float:
        return self._tools.seconds_needed(calls, at_once=self._at_once(calls))

    def _at_once(self, calls: list[ToolCall]) -> int:
        """How many of `calls` run at a time: up to MAX_PARALLEL_TOOLS when they are
        independent, else one."""
        if len(calls) > 1 and self._independent(calls):
            return min(MAX_PARALLEL_TOOLS, len(calls))
        return 1

    def _suspend(self, outcome: TurnOutcome) -> TurnOutcome:
        if outcome.awaiting:
            logger.info("turn waits for an approval after %d steps", outcome.iterations)
            return outcome
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

    def _run_tools(self, ctx: C, calls: list[tuple[int, ToolCall]], finished: Finished) -> None:
        """Run the (index, call) pairs, concurrently when the calls are independent, telling
        `finished` (in this thread) each one's index and result as it answers (those that
        answered meanwhile, together)."""
        for _, call in calls:
            logger.info("tool call", extra={"tool": call.name})
        at_once = self._at_once([call for _, call in calls])
        if at_once == 1:
            for index, call in calls:
                finished([(index, self._tools.execute(ctx, call))])
            return
        with ThreadPoolExecutor(max_workers=at_once) as pool:
            running: dict[Future[str], int] = {
                pool.submit(self._tools.execute, ctx, call): index for index, call in calls
            }
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                finished([(running.pop(future), future.result()) for future in done])

    def _result_message(self, call: ToolCall, result: str) -> dict[str, Any]:
        return {
            "role": "tool",
            "tool_call_id": call.id,
            "name": call.name,
            "content": truncate(result, self._tool_result_max_chars),
        }

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


def recorded_results(
    calls: list[ToolCall], messages: list[dict[str, Any]]
) -> list[dict[str, Any] | None]:
    """For each of a step's calls, its result among `messages` (the tool messages after the
    step), None for a call without one yet."""
    results: list[dict[str, Any] | None] = [None] * len(calls)
    for message in messages:
        for index, call in enumerate(calls):
            if results[index] is None and message.get("tool_call_id") == call.id:
                results[index] = message
                break
    return results


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
