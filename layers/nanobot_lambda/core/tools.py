"""The tool abstraction and the registry that validates and runs the model's tool calls
(the tools themselves are in `nanobot_lambda/tools/`).

Whatever goes wrong in a tool call (bad JSON, unknown tool, invalid arguments, a failing tool)
comes back to the model as an `Error: …` result it can act on; the loop goes on. Every result
passes through `redaction.redact` before the model sees it.

While a call runs, `running_call()` is its id: a step's calls keep their ids when a later run
of the turn runs them again (the step was recorded before they ran, core/agent.py), so a tool
with a lasting effect of its own (a schedule, a background task) names it after the call and
does not make it twice.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import Any, ClassVar

from nanobot_lambda.core import telemetry
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.model import ToolCall, function_tool
from nanobot_lambda.core.redaction import redact
from nanobot_lambda.core.tool_schema import ArgumentError, for_model, validate

logger = logging.getLogger(__name__)

DEFAULT_TOOL_SECONDS = 10.0  # a tool's call that states no longest time of its own

_RUNNING_CALL: ContextVar[str] = ContextVar("running_call", default="")


def running_call() -> str:
    """The id of the tool call being run in this thread ("" outside a call)."""
    return _RUNNING_CALL.get()


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]  # JSON schema of the arguments object
    # Whether a call changes state. Calls that only read run concurrently; a call that writes
    # runs alone unless it names a `path` no other call of the same reply names.
    mutates: ClassVar[bool] = False

    @abstractmethod
    def run(self, *args: Any, **arguments: Any) -> str:
        """Run with validated keyword arguments; raise ToolError for failures the model can fix."""

    def seconds_needed(self, arguments: dict[str, Any]) -> float:
        """The longest this call may take, in seconds: a step's calls that would outlast the
        invocation are continued in a new one instead of being cut off by Lambda's time limit
        (core/agent.py). Tools that wait on the network or a run say how long they may."""
        return DEFAULT_TOOL_SECONDS

    def definition(self) -> dict[str, Any]:
        """What the model is sent: `parameters` without what the registry enforces anyway."""
        return function_tool(self.name, self.description, for_model(self.parameters))


class ToolRegistry:
    def __init__(self, tools: list[Tool]) -> None:
        self._own = {tool.name: tool for tool in tools}
        self._tools = dict(self._own)

    def offer(self, tools: list[Tool]) -> None:
        """The tools of this job beyond the registry's own, after them (the remote servers' tools
        its chat may use). They replace the previous job's: a tool not offered now is unknown
        to this job, in its definitions and when called."""
        self._tools = dict(self._own)
        for tool in tools:
            self._tools.setdefault(tool.name, tool)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def mutates(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.mutates

    def seconds_needed(self, calls: list[ToolCall], *, at_once: int = 1) -> float:
        """The longest `calls` may take when they run `at_once` at a time (1: one after the
        other): each group of `at_once` calls, in order, as long as its longest call. A pool of
        that many workers ends them no later: each group has started by the time the groups
        before it would have ended."""
        needed = [self._seconds_of(call) for call in calls]
        size = max(1, at_once)
        return sum(max(needed[start : start + size]) for start in range(0, len(needed), size))

    def _seconds_of(self, call: ToolCall) -> float:
        tool = self._tools.get(call.name)
        return 0.0 if tool is None else tool.seconds_needed(call.json_object() or {})

    def definitions(self) -> list[dict[str, Any]]:
        return [tool.definition() for tool in self._tools.values()]

    def execute(self, call: ToolCall) -> str:
        """The call's result as the model will see it: never with a secret in it (a file or
        page that holds the bot token or an API key shows `[REDACTED]` instead)."""
        running = _RUNNING_CALL.set(call.id)
        try:
            with telemetry.span("tool", tool=call.name if call.name in self._tools else "unknown"):
                return redact(self._run(call))
        finally:
            _RUNNING_CALL.reset(running)

    def _run(self, call: ToolCall) -> str:
        tool = self._tools.get(call.name)
        if tool is None:
            return (
                f"Error: there is no tool named '{call.name}'. "
                f"Available tools: {', '.join(self._tools)}."
            )
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as error:
            return f"Error: the arguments are not valid JSON ({error.msg}). Send a JSON object."
        if not isinstance(arguments, dict):
            return "Error: the arguments must be a JSON object."
        try:
            arguments = validate(tool.parameters, arguments)
        except ArgumentError as error:
            return f"Error: invalid arguments for {call.name}: " + "; ".join(error.problems) + "."
        try:
            return tool.run(**arguments)
        except ToolError as error:
            return f"Error: {error}"
        except Exception as error:
            logger.exception("tool %s failed", call.name)
            return (
                f"Error: {call.name} failed unexpectedly ({type(error).__name__}). "
                "Try again, or use another approach."
            )
