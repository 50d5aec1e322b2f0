"""The tool abstraction and the registry that validates and runs the model's tool calls
(the tools themselves are in `nanobot_lambda/tools/`).

Whatever goes wrong in a tool call (bad JSON, unknown tool, invalid arguments, a failing tool)
comes back to the model as an `Error: …` result it can act on; the loop goes on. Every result
passes through `redaction.redact` before the model sees it.

A tool runs with the job's context as its first argument (`Tool.run(ctx, **arguments)`: the
functions' `JobContext`, tools/context.py), made for the call (`for_call`): a step's calls keep
their ids when a later run of the turn runs them again (the step was recorded before they ran,
core/agent.py), so a tool with a lasting effect of its own (a schedule, a background task) names
it after the call and does not make it twice.

A registry is a value: a job's is the container's tools and those offered to the job's chat
(`with_tools`: the remote servers' it may use); a tool it does not hold is unknown to the job, in
the definitions the model is sent and when called.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from nanobot_lambda.core import telemetry
from nanobot_lambda.core.approvals import Call as ApprovalCall
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.model import ToolCall, function_tool
from nanobot_lambda.core.redaction import redact
from nanobot_lambda.core.tool_schema import (
    ArgumentError,
    ToolArguments,
    arguments_schema,
    for_model,
    validate,
)

logger = logging.getLogger(__name__)

DEFAULT_TOOL_SECONDS = 10.0  # a tool's call that states no longest time of its own


class CallContext(Protocol):
    """What a tool's call is given beside its arguments: the job's context (tools/context.py)."""

    def for_call(self, call_id: str) -> Self:
        """The context of one call, by its id (stable across runs of the turn)."""
        ...


C = TypeVar("C", bound=CallContext)


class Tool(ABC, Generic[C]):
    """A tool, declared in one place: its name, its description, its arguments (`Arguments`, a
    `ToolArguments` model: the schema the model is sent, `parameters`, is derived from it) and
    `run`, which gets them checked (a call that does not fit is an error the model reads)."""

    name: ClassVar[str]
    description: ClassVar[str]
    Arguments: ClassVar[type[ToolArguments]]
    # JSON schema of the arguments object: derived from `Arguments`; a remote tool's is the one
    # its server states (tools/remote.py).
    parameters: ClassVar[dict[str, Any]]
    # Whether a call changes state. Calls that only read run concurrently; a call that writes
    # runs alone unless it names a `path` no other call of the same reply names.
    mutates: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        arguments = cls.__dict__.get("Arguments")
        if arguments is not None:
            cls.parameters = arguments_schema(arguments)

    @abstractmethod
    def run(self, ctx: C, /, *args: Any, **arguments: Any) -> str:
        """Run for the job of `ctx` with validated keyword arguments; raise ToolError for
        failures the model can fix."""

    def seconds_needed(self, arguments: dict[str, Any]) -> float:
        """The longest this call may take, in seconds: a step's calls that would outlast the
        invocation are continued in a new one instead of being cut off by Lambda's time limit
        (core/agent.py). Tools that wait on the network or a run say how long they may."""
        return DEFAULT_TOOL_SECONDS

    def approval_call(self, arguments: dict[str, Any]) -> ApprovalCall:
        """The call as the approval policy reads it (core/approvals.py)."""
        return ApprovalCall(self.name, arguments)

    def definition(self) -> dict[str, Any]:
        """What the model is sent: `parameters` without what the registry enforces anyway."""
        return function_tool(self.name, self.description, for_model(self.parameters))


class ToolRegistry(Generic[C]):
    """The tools of a job, by name."""

    def __init__(self, tools: Iterable[Tool[C]] = ()) -> None:
        self._tools = {tool.name: tool for tool in tools}

    def with_tools(self, more: Iterable[Tool[C]]) -> ToolRegistry[C]:
        """These tools and, after them, `more` (a name already held keeps its tool)."""
        tools = dict(self._tools)
        for tool in more:
            tools.setdefault(tool.name, tool)
        return ToolRegistry(tools.values())

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

    def approval_call(self, call: ToolCall) -> ApprovalCall | None:
        """`call` as the approval policy reads it; None when it would not run anyway (no such
        tool, arguments that are no JSON object: the registry answers it with an error)."""
        tool = self._tools.get(call.name)
        arguments = call.json_object()
        if tool is None or arguments is None:
            return None
        return tool.approval_call(arguments)

    def execute(self, ctx: C, call: ToolCall) -> str:
        """The call's result as the model will see it: never with a secret in it (a file or
        page that holds the bot token or an API key shows `[REDACTED]` instead)."""
        with telemetry.span("tool", tool=call.name if call.name in self._tools else "unknown"):
            return redact(self._run(ctx.for_call(call.id), call))

    def _run(self, ctx: C, call: ToolCall) -> str:
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
            return tool.run(ctx, **arguments)
        except ToolError as error:
            return f"Error: {error}"
        except Exception as error:
            logger.exception("tool %s failed", call.name)
            return (
                f"Error: {call.name} failed unexpectedly ({type(error).__name__}). "
                "Try again, or use another approach."
            )
