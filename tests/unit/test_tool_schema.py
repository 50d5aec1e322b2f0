"""Tool-argument validation: each schema keyword, safe casts, paths in messages, the registry."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest

from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.tool_schema import ArgumentError, for_model, validate
from nanobot_lambda.core.tools import Tool
from tests.support.job_context import JobTools


def problems(schema: dict[str, Any], value: Any) -> list[str]:
    with pytest.raises(ArgumentError) as caught:
        validate(schema, value)
    return caught.value.problems


def arg(schema: dict[str, Any]) -> dict[str, Any]:
    """An arguments object with one property `x` of the given schema."""
    return {"type": "object", "properties": {"x": schema}}


@pytest.mark.parametrize(
    ("schema", "good", "bad", "message"),
    [
        ({"type": "string"}, "hi", [], "argument 'x' must be of type string (got array)"),
        ({"type": "integer"}, 3, 2.5, "argument 'x' must be of type integer (got number)"),
        ({"type": "number"}, 2.5, "a", "argument 'x' must be of type number (got string)"),
        ({"type": "boolean"}, False, 0, "argument 'x' must be of type boolean (got integer)"),
        ({"type": "array"}, [1], {}, "argument 'x' must be of type array (got object)"),
        ({"type": "object"}, {}, "a", "argument 'x' must be of type object (got string)"),
        ({"type": "null"}, None, "a", "argument 'x' must be of type null (got string)"),
        ({"type": ["string", "null"]}, None, [], "must be of type string or null (got array)"),
        ({"enum": ["reminder", "task"]}, "task", "alarm", "argument 'x' must be one of"),
        ({"const": "on"}, "on", "off", "argument 'x' must be 'on' (got 'off')"),
        ({"minimum": 60}, 60, 10, "argument 'x' must be >= 60 (got 10)"),
        ({"maximum": 5}, 5, 6, "argument 'x' must be <= 5 (got 6)"),
        ({"exclusiveMinimum": 0}, 0.5, 0, "argument 'x' must be > 0 (got 0)"),
        ({"exclusiveMaximum": 1}, 0.5, 1, "argument 'x' must be < 1 (got 1)"),
        ({"minLength": 2}, "ab", "a", "must be at least 2 characters long (got 1)"),
        ({"maxLength": 2}, "ab", "abc", "must be at most 2 characters long (got 3)"),
        ({"pattern": "^[a-z]+$"}, "abc", "Abc", "must match pattern '^[a-z]+$' (got 'Abc')"),
        ({"minItems": 1}, [1], [], "argument 'x' must have at least 1 items (got 0)"),
        ({"maxItems": 1}, [1], [1, 2], "argument 'x' must have at most 1 items (got 2)"),
    ],
)
def test_keywords(schema: dict[str, Any], good: Any, bad: Any, message: str) -> None:
    assert validate(arg(schema), {"x": good}) == {"x": good}
    (problem,) = problems(arg(schema), {"x": bad})
    assert message in problem


def test_enum_message_and_strict_equality() -> None:
    schema = arg({"enum": ["reminder", "task"]})
    assert problems(schema, {"x": "alarm"}) == [
        "argument 'x' must be one of 'reminder', 'task' (got 'alarm')"
    ]
    assert problems(arg({"enum": [1, 2]}), {"x": True}) == [
        "argument 'x' must be one of 1, 2 (got true)"
    ]
    assert validate(arg({"enum": [1, 2]}), {"x": 2.0}) == {"x": 2.0}


def test_bool_is_not_a_number() -> None:
    for kind in ("integer", "number"):
        assert problems(arg({"type": kind}), {"x": True}) == [
            f"argument 'x' must be of type {kind} (got boolean)"
        ]


def test_required_and_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "offset": {}, "limit": {}},
        "required": ["path"],
        "additionalProperties": False,
    }
    assert problems(schema, {"mode": "x"}) == [
        "missing required argument 'path'",
        "unknown argument 'mode' (expected: path, offset, limit)",
    ]
    assert validate({"type": "object"}, {"any": 1}) == {"any": 1}
    typed_extras = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert validate(typed_extras, {"a": "1"}) == {"a": 1}
    assert problems(typed_extras, {"a": "b"}) == [
        "argument 'a' must be of type integer (got string)"
    ]
    assert problems({"type": "object"}, []) == ["arguments must be of type object (got array)"]


def test_nested_paths_and_every_problem_at_once() -> None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"items": {"type": "string"}}},
        "required": ["name"],
    }
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": item}, "count": {"minimum": 1}},
    }
    value = {
        "items": [{"name": "a"}, {"name": "b", "tags": ["x", {}]}, {}],
        "count": 0,
    }
    assert problems(schema, value) == [
        "argument 'items[1].tags[1]' must be of type string (got object)",
        "missing required argument 'items[2].name'",
        "argument 'count' must be >= 1 (got 0)",
    ]


@pytest.mark.parametrize(
    ("kind", "sent", "received"),
    [
        ("integer", "42", 42),
        ("integer", "-3", -3),
        ("integer", " 7 ", 7),
        ("integer", 3.0, 3),
        ("number", "2.5", 2.5),
        ("number", "-4", -4),
        ("number", "1e3", 1000.0),
        ("boolean", "true", True),
        ("boolean", "FALSE", False),
        ("string", 123456789, "123456789"),
        ("string", 1.5, "1.5"),
        ("array", '["a", "b"]', ["a", "b"]),
        ("object", '{"a": 1}', {"a": 1}),
    ],
)
def test_safe_casts(kind: str, sent: Any, received: Any) -> None:
    result = validate(arg({"type": kind}), {"x": sent})["x"]
    assert result == received
    assert type(result) is type(received)


@pytest.mark.parametrize(
    ("kind", "sent"),
    [
        ("integer", "4.5"),
        ("integer", "3.0"),
        ("integer", 4.5),
        ("integer", ""),
        ("integer", True),
        ("number", "nan"),
        ("number", "12abc"),
        ("boolean", "yes"),
        ("boolean", "1"),
        ("boolean", 1),
        ("string", True),
        ("string", None),
        ("array", "a, b"),
        ("array", '{"a": 1}'),
        ("array", "[1,"),
        ("object", "[1]"),
        ("null", "null"),
    ],
)
def test_casts_that_must_not_happen(kind: str, sent: Any) -> None:
    (problem,) = problems(arg({"type": kind}), {"x": sent})
    assert problem.startswith(f"argument 'x' must be of type {kind} (got ")


def test_casts_happen_before_constraints_and_recurse() -> None:
    assert problems(arg({"type": "integer", "minimum": 1}), {"x": "0"}) == [
        "argument 'x' must be >= 1 (got 0)"
    ]
    schema = arg({"type": "array", "items": {"type": "integer"}})
    assert validate(schema, {"x": '["1", 2]'}) == {"x": [1, 2]}
    assert problems(schema, {"x": '["a"]'}) == [
        "argument 'x[0]' must be of type integer (got string)"
    ]


def test_valid_values_are_never_cast() -> None:
    assert validate(arg({"type": ["integer", "string"]}), {"x": "5"}) == {"x": "5"}
    assert validate(arg({"type": ["integer", "null"]}), {"x": "5"}) == {"x": 5}


def test_any_of() -> None:
    cron = {"type": "string", "pattern": "^cron "}
    schema = arg({"anyOf": [{"type": "integer", "minimum": 60}, cron]})
    assert validate(schema, {"x": 90}) == {"x": 90}
    assert validate(schema, {"x": "cron 5 * * * *"}) == {"x": "cron 5 * * * *"}
    assert validate(schema, {"x": "90"}) == {"x": 90}  # the first branch that fits after casting
    assert problems(schema, {"x": 10}) == [
        "argument 'x' matches none of the alternatives "
        "(must be >= 60 (got 10) | must match pattern '^cron ' (got '10'))"
    ]
    strings_first = arg({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert validate(strings_first, {"x": 5}) == {"x": 5}  # already valid: kept as sent
    assert validate(strings_first, {"x": "5"}) == {"x": "5"}
    casting = arg({"anyOf": [{"type": "null"}, {"type": "integer"}]})
    assert validate(casting, {"x": "7"}) == {"x": 7}


def test_one_of() -> None:
    schema = arg({"oneOf": [{"type": "integer"}, {"type": "string"}]})
    assert validate(schema, {"x": "5"}) == {"x": "5"}  # the string branch fits without a cast
    assert validate(schema, {"x": 5}) == {"x": 5}
    assert problems(schema, {"x": []}) == [
        "argument 'x' matches none of the alternatives "
        "(must be of type integer (got array) | must be of type string (got array))"
    ]
    overlapping = arg({"oneOf": [{"type": "integer"}, {"minimum": 0}]})
    assert problems(overlapping, {"x": 3}) == [
        "argument 'x' must match exactly one alternative (matched 2)"
    ]
    assert validate(arg({"oneOf": [{"type": "boolean"}, {"type": "null"}]}), {"x": "true"}) == {
        "x": True
    }


def test_unknown_keywords_and_default_are_ignored() -> None:
    schema = arg({"type": "string", "format": "date", "default": "today", "title": "When"})
    assert validate(schema, {}) == {}
    assert validate(schema, {"x": "soon"}) == {"x": "soon"}


class Echo(Tool):
    name = "echo"
    description = "Echo the arguments."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "offset": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["reminder", "task"]},
        },
        "required": ["offset"],
        "additionalProperties": False,
    }

    def run(self, ctx: Any, /, *args: Any, **arguments: Any) -> str:
        return json.dumps(arguments, sort_keys=True)


def test_registry_passes_cast_arguments_to_run() -> None:
    registry = JobTools([Echo()])
    result = registry.execute(ToolCall("1", "echo", '{"offset": "5", "tags": "[42, \\"b\\"]"}'))
    assert json.loads(result) == {"offset": 5, "tags": ["42", "b"]}


def test_registry_reports_every_problem_in_one_result() -> None:
    registry = JobTools([Echo()])
    result = registry.execute(ToolCall("1", "echo", '{"tags": ["a", {}], "kind": "alarm"}'))
    assert result == (
        "Error: invalid arguments for echo: missing required argument 'offset'; "
        "argument 'tags[1]' must be of type string (got object); "
        "argument 'kind' must be one of 'reminder', 'task' (got 'alarm')."
    )


def test_the_model_is_not_sent_what_the_registry_enforces_anyway() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 40},
            "note": {"type": "string", "minLength": 3},
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {}, "additionalProperties": False},
            },
            "either": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1}},
            # Properties that happen to be called like the keywords are the tool's own.
            "additionalProperties": {"type": "boolean"},
            "minLength": {"type": "integer"},
        },
        "additionalProperties": False,
    }
    assert for_model(schema) == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 40},
            "note": {"type": "string", "minLength": 3},
            "items": {"type": "array", "items": {"type": "object", "properties": {}}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}},
            "additionalProperties": {"type": "boolean"},
            "minLength": {"type": "integer"},
        },
    }
    assert schema["additionalProperties"] is False  # the tool's own schema is left as it was


class Named(Tool):
    name = "named"
    description = "Takes a name."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}},
        "required": ["name"],
        "additionalProperties": False,
    }

    def run(self, ctx: Any, /, *args: Any, **arguments: Any) -> str:
        return f"hello {arguments['name']}"


def test_what_the_model_is_not_sent_is_still_enforced_on_each_call() -> None:
    registry = JobTools([Named()])
    sent = registry.definitions()[0]["function"]["parameters"]
    assert sent == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    }
    assert registry.execute(ToolCall("1", "named", '{"name": "", "age": 3}')) == (
        "Error: invalid arguments for named: argument 'name' must be at least 1 characters "
        "long (got 0); unknown argument 'age' (expected: name)."
    )
    assert registry.execute(ToolCall("2", "named", '{"name": "Ada"}')) == "hello Ada"
