"""Tools the model can call, and the registry that validates and runs them.

Whatever goes wrong in a tool call (bad JSON, unknown tool, invalid arguments, a failing tool)
comes back to the model as an `Error: …` result it can act on; the loop goes on.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from nanobot_lambda.model import ToolCall

logger = logging.getLogger(__name__)


class ToolError(Exception):
    """A failure the model can fix (bad path, text not found, …). The message is for the model."""


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]  # JSON schema of the arguments object

    @abstractmethod
    def run(self, *args: Any, **arguments: Any) -> str:
        """Run with validated keyword arguments; raise ToolError for failures the model can fix."""

    def definition(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def validate_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Check arguments against the top level of a tool schema; returns the problems found."""
    problems = []
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            problems.append(f"missing required argument '{name}'")
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties", True) is False:
                problems.append(f"unknown argument '{name}' (expected: {', '.join(properties)})")
            continue
        expected = spec.get("type")
        if expected in _JSON_TYPES:
            # bool is an int in Python, but not an integer in JSON schema.
            wrong_bool = isinstance(value, bool) and expected in ("integer", "number")
            if wrong_bool or not isinstance(value, _JSON_TYPES[expected]):
                problems.append(f"argument '{name}' must be of type {expected}")
                continue
        if "minimum" in spec and isinstance(value, int | float) and value < spec["minimum"]:
            problems.append(f"argument '{name}' must be >= {spec['minimum']}")
    return problems


class ToolRegistry:
    def __init__(self, tools: list[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        return [tool.definition() for tool in self._tools.values()]

    def execute(self, call: ToolCall) -> str:
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
        problems = validate_arguments(tool.parameters, arguments)
        if problems:
            return f"Error: invalid arguments for {call.name}: " + "; ".join(problems) + "."
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
