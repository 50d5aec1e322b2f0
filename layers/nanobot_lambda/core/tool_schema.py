"""A tool's arguments: declared as a pydantic model (`ToolArguments`), from which the JSON schema
the model is sent and each call is checked against is derived (`arguments_schema`); and the
check itself (`validate`), against that schema or a remote tool's (an MCP server's).

Validate tool-call arguments against a tool's JSON schema, applying safe casts.

The subset LLM tool schemas use: `type` (a name or a list), `enum`, `const`, numeric bounds,
`minLength`/`maxLength`, `pattern`, `minItems`/`maxItems`, `items`, `properties`, `required`,
`additionalProperties`, `anyOf`, `oneOf`. Other keywords are ignored; `default` is not applied.

Models often send stringly values ("5" for an integer, "true" for a boolean, a JSON-encoded list);
those are cast when the meaning is unambiguous, before the constraints are checked. A value that
is already valid is never changed.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

_INTEGER = re.compile(r"[-+]?[0-9]+")
_NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_NO_CAST = object()
_TYPES: dict[str, Callable[[Any], bool]] = {
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_BOUNDS = (
    ("minimum", ">=", operator.ge),
    ("maximum", "<=", operator.le),
    ("exclusiveMinimum", ">", operator.gt),
    ("exclusiveMaximum", "<", operator.lt),
)
_SIZES = (
    ("minLength", "string", operator.ge, "be at least {} characters long"),
    ("maxLength", "string", operator.le, "be at most {} characters long"),
    ("minItems", "array", operator.ge, "have at least {} items"),
    ("maxItems", "array", operator.le, "have at most {} items"),
)


class ToolArguments(BaseModel):
    """A tool's arguments, one field each, described with `Field(description=...)` where the
    name does not say enough; one the model may leave out is `X | None = None` (the tool's
    `run` has its default). No other argument is taken."""

    model_config = ConfigDict(extra="forbid")


def arguments_schema(arguments: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of `arguments`, as `validate` checks a call against it: pydantic's,
    without what the check does not use (titles, defaults, the model's docstring), each
    reference written out, and an argument that may be left out typed as it is when given."""
    schema = arguments.model_json_schema()
    definitions = schema.pop("$defs", {})
    schema.pop("description", None)
    plain: dict[str, Any] = _plain(schema, definitions)
    return plain


_NULL = {"type": "null"}
# The keywords' order, as the schemas were written by hand; then the rest, description last.
_FIRST = (
    "type",
    "enum",
    "items",
    "properties",
    "required",
    *("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"),
)


def _plain(node: Any, definitions: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_plain(item, definitions) for item in node]
    if not isinstance(node, Mapping):
        return node
    options = node.get("anyOf")
    if isinstance(options, list) and _NULL in options:  # `X | None = None`: left out, not null
        given = [option for option in options if option != _NULL]
        rest = {key: value for key, value in node.items() if key != "anyOf"}
        return _plain({**(given[0] if len(given) == 1 else {"anyOf": given}), **rest}, definitions)
    if "$ref" in node:
        rest = {key: value for key, value in node.items() if key != "$ref"}
        return _plain({**definitions[node["$ref"].rsplit("/", 1)[-1]], **rest}, definitions)
    plain: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "default"):
            continue
        if key == "properties":
            plain[key] = {name: _plain(item, definitions) for name, item in value.items()}
        else:
            plain[key] = _plain(value, definitions)
    if plain.get("type") == "object" and "properties" in plain:
        plain.setdefault("required", [])
    order = [*_FIRST, *(key for key in plain if key not in _FIRST and key != "description")]
    return {key: plain[key] for key in [*order, "description"] if key in plain}


class ArgumentError(Exception):
    """The arguments do not fit the schema; `problems` are messages the model can act on."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def validate(schema: Mapping[str, Any], value: Any) -> Any:
    """Return `value` with safe casts applied, or raise ArgumentError listing every problem."""
    problems: list[str] = []
    result = _check(schema, value, "", problems, cast=True)
    if problems:
        raise ArgumentError(problems)
    return result


# What validate() enforces that the model needs no telling: an object takes no arguments but its
# properties, and a string is not empty. Left out of the schemas the model is sent (about 100 of
# the tool definitions' 1,600 tokens, paid on every uncached request); still checked on each call,
# whose error says what was wrong.
_ENFORCED_ONLY = (("additionalProperties", False), ("minLength", 1))


def for_model(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as the model is sent it: without the keywords of _ENFORCED_ONLY (at any depth;
    a property that happens to be called so is kept)."""
    trimmed: dict[str, Any] = {}
    for keyword, value in schema.items():
        if any(keyword == key and _same(value, implied) for key, implied in _ENFORCED_ONLY):
            continue
        if keyword == "properties" and isinstance(value, Mapping):
            value = {name: _sub_schema(item) for name, item in value.items()}
        elif keyword in ("items", "additionalProperties"):
            value = _sub_schema(value)
        elif keyword in ("anyOf", "oneOf") and isinstance(value, list):
            value = [_sub_schema(branch) for branch in value]
        trimmed[keyword] = value
    return trimmed


def _sub_schema(value: Any) -> Any:
    return for_model(value) if isinstance(value, Mapping) else value


def _check(
    schema: Mapping[str, Any], value: Any, path: str, problems: list[str], cast: bool
) -> Any:
    label = _label(path)
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        if not any(_is(kind, value) for kind in kinds):
            converted = _cast_to(kinds, value) if cast else _NO_CAST
            if converted is _NO_CAST:
                got = _type_name(value)
                problems.append(f"{label} must be of type {' or '.join(kinds)} (got {got})")
                return value
            value = converted
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            value = _alternatives(keyword, schema[keyword], value, path, problems, cast)
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        options = ", ".join(map(_show, schema["enum"]))
        problems.append(f"{label} must be one of {options} (got {_show(value)})")
    if "const" in schema and not _same(value, schema["const"]):
        problems.append(f"{label} must be {_show(schema['const'])} (got {_show(value)})")
    if _is("number", value):
        for keyword, sign, holds in _BOUNDS:
            bound: Any = schema.get(keyword)
            if _is("number", bound) and not holds(value, bound):
                problems.append(f"{label} must be {sign} {bound} (got {_show(value)})")
    for keyword, kind, fits, rule in _SIZES:
        if keyword in schema and _is(kind, value) and not fits(len(value), schema[keyword]):
            problems.append(f"{label} must {rule.format(schema[keyword])} (got {len(value)})")
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{label} must match pattern '{schema['pattern']}' (got {_show(value)})")
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        value = [_check(items, v, f"{path}[{i}]", problems, cast) for i, v in enumerate(value)]
    if isinstance(value, dict):
        value = _check_object(schema, value, path, problems, cast)
    return value


def _check_object(
    schema: Mapping[str, Any], value: dict[str, Any], path: str, problems: list[str], cast: bool
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for name in schema.get("required", []):
        if name not in value:
            problems.append(f"missing required argument '{_join(path, name)}'")
    result: dict[str, Any] = {}
    for name, item in value.items():
        where = _join(path, name)
        if name in properties:
            result[name] = _check(properties[name], item, where, problems, cast)
        elif extra is False:
            expected = ", ".join(properties) or "none"
            problems.append(f"unknown argument '{where}' (expected: {expected})")
        elif isinstance(extra, Mapping):
            result[name] = _check(extra, item, where, problems, cast)
        else:
            result[name] = item
    return result


def _alternatives(
    keyword: str, branches: list[Any], value: Any, path: str, problems: list[str], cast: bool
) -> Any:
    """anyOf: the first branch that fits wins; oneOf: exactly one must fit.

    Branches are tried without casts first, so a valid value keeps its type ("5" for a string
    branch is not turned into 5 by an integer branch listed before it).
    """
    label = _label(path)
    failures: list[str] = []
    for with_casts in (False, True) if cast else (False,):
        matches: list[Any] = []
        failures = []
        for branch in branches:
            branch_problems: list[str] = []
            result = _check(branch, value, path, branch_problems, with_casts)
            if branch_problems:
                failures.append(branch_problems[0].removeprefix(f"{label} "))
            elif keyword == "anyOf":
                return result
            else:
                matches.append(result)
        if len(matches) == 1:
            return matches[0]
        if matches:
            problems.append(f"{label} must match exactly one alternative (matched {len(matches)})")
            return value
    problems.append(f"{label} matches none of the alternatives ({' | '.join(failures)})")
    return value


def _cast_to(kinds: list[str], value: Any) -> Any:
    """`value` converted to the first of `kinds` it unambiguously means, else _NO_CAST."""
    for kind in kinds:
        try:
            if isinstance(value, str):
                text = value.strip()
                if kind == "integer" and _INTEGER.fullmatch(text):
                    return int(text)
                if kind == "number" and _NUMBER.fullmatch(text):
                    return int(text) if _INTEGER.fullmatch(text) else float(text)
                if kind == "boolean" and text.lower() in ("true", "false"):
                    return text.lower() == "true"
                if kind in ("array", "object") and text.startswith(("[", "{")):
                    parsed = json.loads(text)
                    if _is(kind, parsed):
                        return parsed
            elif kind == "integer" and isinstance(value, float) and value.is_integer():
                return int(value)
            elif kind == "string" and _is("number", value):
                return str(value)
        except (ValueError, RecursionError):  # malformed JSON, or absurdly long digit strings
            continue
    return _NO_CAST


def _is(kind: str, value: Any) -> bool:
    check = _TYPES.get(kind)
    return check is None or check(value)  # an unknown type name constrains nothing


def _type_name(value: Any) -> str:
    return next((name for name, check in _TYPES.items() if check(value)), type(value).__name__)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 equals 1.0, but true does not equal 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    return bool(a == b)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f"'{value}'" if len(value) <= 40 else f"'{value[:40]}…'"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:40] + "…"


def _label(path: str) -> str:
    return f"argument '{path}'" if path else "arguments"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
