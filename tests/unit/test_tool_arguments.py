"""A tool is declared in one place (issue 38): its arguments are a pydantic model (`Arguments`,
core/tool_schema.py's `ToolArguments`), the JSON schema the model is sent and each call is checked
against is derived from it, and a call that does not fit still comes back to the model as an
error it can act on."""

from __future__ import annotations

import inspect
import json
from datetime import UTC, datetime
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.tool_schema import ToolArguments, arguments_schema
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.functions.agent_turn.toolbox import ToolServices, agent_tools
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.files import ReadFile
from tests.support.fakes import MemoryJobStore, MemoryQueue, MemorySchedules
from tests.support.job_context import JobTools
from tests.support.settings import AGENT_ENV


def every_agent_tool() -> list[Tool[Any]]:
    """agent_turn's tools, those of the optional services (images, the sandbox) too."""
    workspace_tools, chat_tools = agent_tools(
        AgentSettings.from_env(AGENT_ENV),
        ToolServices(
            MemoryJobStore(),
            MemorySchedules(),
            MemoryQueue(),
            images=object(),  # type: ignore[arg-type]  # only its presence counts here
            sandbox=object(),  # type: ignore[arg-type]
        ),
        lambda: datetime.now(UTC),
    )
    return [*workspace_tools, *chat_tools]


TOOLS = every_agent_tool()


def test_the_tools_are_all_there() -> None:
    names = {tool.name for tool in TOOLS}
    assert {"read_file", "grep", "web_fetch", "exec", "cron", "message", "generate_image"} <= names


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_a_tool_s_schema_is_derived_from_its_arguments(tool: Tool[Any]) -> None:
    assert issubclass(tool.Arguments, ToolArguments)
    assert tool.parameters == arguments_schema(tool.Arguments)
    assert tool.parameters["additionalProperties"] is False


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_a_tool_s_arguments_are_those_its_run_takes(tool: Tool[Any]) -> None:
    """Each argument the model may send is one `run` takes, and one it must send is one `run`
    has no default for: the model of the arguments and the code cannot drift apart."""
    fields = tool.Arguments.model_fields
    parameters = list(inspect.signature(tool.run).parameters.values())[1:]  # after ctx
    named = {p.name: p for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD}
    takes_more = len(named) < len(parameters)  # **arguments: passed on (cron's actions)
    assert set(named) <= set(fields)
    assert takes_more or set(named) == set(fields)
    for name, parameter in named.items():
        required = parameter.default is inspect.Parameter.empty
        assert fields[name].is_required() is required, name


class Nested(BaseModel):
    at: str = Field(min_length=1)


class Example(ToolArguments):
    """Not sent: the tool's description is."""

    mode: Literal["a", "b"]
    count: int | None = Field(None, ge=1, le=5, description="How many.")
    tags: list[str] | None = Field(None, min_length=1)
    where: Nested | None = None


def test_the_derived_schema_is_the_plain_json_schema_the_check_and_the_model_use() -> None:
    """No titles, defaults or references; an argument that may be left out is typed as given
    (the model leaves it out, never sends null); no other argument is taken."""
    assert arguments_schema(Example) == {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 5, "description": "How many."},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "where": {
                "type": "object",
                "properties": {"at": {"type": "string", "minLength": 1}},
                "required": ["at"],
            },
        },
        "required": ["mode"],
        "additionalProperties": False,
    }


def test_a_call_that_does_not_fit_the_arguments_is_an_error_the_model_reads() -> None:
    tools = JobTools([ReadFile()])
    result = tools.execute(ToolCall("c1", "read_file", json.dumps({"path": "a.md", "offset": 0})))
    assert (
        result == "Error: invalid arguments for read_file: argument 'offset' must be >= 1 (got 0)."
    )
    result = tools.execute(ToolCall("c2", "read_file", json.dumps({"path": "a.md", "mode": "x"})))
    assert result.startswith("Error: invalid arguments for read_file: unknown argument 'mode'")
    # A stringly number is cast, as before: the page is read.
    tools.ctx.workspace.write("a.md", b"one\ntwo\n")
    result = tools.execute(ToolCall("c3", "read_file", '{"path": "a.md", "offset": "2"}'))
    assert result.startswith("two\n")
