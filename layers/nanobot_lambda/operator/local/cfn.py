"""Read `infra/template.yaml` so the local stack and the tests use the deployed definitions.

A small evaluator for the intrinsic functions the template uses (Ref, GetAtt, Sub, If, Equals,
Not, Join, Select): enough to derive local resource names, queue attributes and each function's
environment from the same file SAM deploys, so the two cannot drift.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_SHORT_TAGS = {
    "!Ref": "Ref",
    "!Condition": "Condition",
    **{
        f"!{name}": f"Fn::{name}"
        for name in (
            "GetAtt",
            "Sub",
            "If",
            "Equals",
            "Not",
            "And",
            "Or",
            "Join",
            "Select",
            "Split",
            "FindInMap",
            "Base64",
            "GetAZs",
            "ImportValue",
        )
    },
}


# libyaml's parser when PyYAML was built with it (about 5 times faster), else PyYAML's own.
try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - a PyYAML without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]


class _TemplateLoader(_SafeLoader):
    """SafeLoader that turns CloudFormation short tags into their long (JSON) form."""


def _construct_tag(loader: _SafeLoader, node: yaml.Node) -> dict[str, Any]:
    name = _SHORT_TAGS[node.tag]
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if name == "Fn::GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


for _tag in _SHORT_TAGS:
    _TemplateLoader.add_constructor(_tag, _construct_tag)


# Parsed templates by path, with the file's size and modification time when it was read: a
# process that starts several stacks (`chat`'s parameters, then its stack; the tests) parses
# the template once. Each caller gets its own copy.
_parsed: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def load_template(path: Path) -> dict[str, Any]:
    stat = path.stat()
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _parsed.get(path)
    if cached is None or cached[0] != version:
        with path.open(encoding="utf-8") as handle:
            loaded = yaml.load(handle, Loader=_TemplateLoader)  # noqa: S506 - SafeLoader subclass
        if not isinstance(loaded, dict) or "Resources" not in loaded:
            raise ValueError(f"{path} is not a CloudFormation template")
        cached = _parsed[path] = (version, loaded)
    return copy.deepcopy(cached[1])


def find_template(start: Path | None = None) -> Path:
    """Locate infra/template.yaml from the working directory upwards, then beside the package."""
    candidates = [Path.cwd(), *Path.cwd().parents]
    if start is not None:
        candidates = [start, *start.parents, *candidates]
    candidates += list(Path(__file__).resolve().parents)
    for directory in candidates:
        template = directory / "infra" / "template.yaml"
        if template.is_file():
            return template
    raise FileNotFoundError("infra/template.yaml not found: run from the nanobot-lambda checkout")


class UnresolvedValue(Exception):
    pass


SQS_DEFAULT_BATCH_SIZE = 10


@dataclass(frozen=True)
class QueueMapping:
    """An SQS event source mapping: which queue (logical id) feeds a function, how many
    messages an invocation gets, and how many invocations may run at once (its ScalingConfig's
    MaximumConcurrency; None: as many as Lambda scales to)."""

    queue: str
    batch_size: int
    maximum_concurrency: int | None = None


@dataclass
class TemplateContext:
    """What the evaluator knows: parameter values and what each resource's Ref/GetAtt yields."""

    template: dict[str, Any]
    parameters: dict[str, str] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    attributes: dict[tuple[str, str], str] = field(default_factory=dict)
    pseudo: dict[str, str] = field(
        default_factory=lambda: {
            "AWS::Region": "us-east-1",
            "AWS::AccountId": "123456789012",
            "AWS::Partition": "aws",
            "AWS::StackName": "nanobot-local",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": "",
        }
    )

    def __post_init__(self) -> None:
        declared = self.template.get("Parameters", {})
        defaults = {
            name: str(spec["Default"]) for name, spec in declared.items() if "Default" in spec
        }
        self.parameters = {**defaults, **self.parameters}

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            name: spec
            for name, spec in self.template["Resources"].items()
            if spec.get("Type") == resource_type
        }

    def condition(self, name: str) -> bool:
        return bool(self.evaluate(self.template["Conditions"][name]))

    def resource_enabled(self, logical_id: str) -> bool:
        """Whether the template declares the resource and its Condition (if any) holds."""
        resource = self.template["Resources"].get(logical_id)
        if resource is None:
            return False
        return "Condition" not in resource or self.condition(resource["Condition"])

    def evaluate(self, value: Any) -> Any:
        """Evaluate intrinsic functions in `value`; raises UnresolvedValue when it cannot."""
        if isinstance(value, list):
            return [self.evaluate(item) for item in value]
        if not isinstance(value, Mapping):
            return value
        if len(value) != 1:
            return {key: self.evaluate(item) for key, item in value.items()}
        ((name, argument),) = value.items()
        if name == "Ref":
            return self._ref_value(argument)
        if name == "Fn::GetAtt":
            resource, attribute = argument
            try:
                return self.attributes[(resource, attribute)]
            except KeyError:
                raise UnresolvedValue(f"GetAtt {resource}.{attribute}") from None
        if name == "Fn::Sub":
            return self._sub(argument)
        if name == "Fn::If":
            condition, when_true, when_false = argument
            return self.evaluate(when_true if self.condition(condition) else when_false)
        if name == "Fn::Equals":
            left, right = (self.evaluate(item) for item in argument)
            return str(left) == str(right)
        if name == "Fn::Not":
            return not self.evaluate(argument[0])
        if name == "Fn::And":
            return all(self.evaluate(item) for item in argument)
        if name == "Fn::Or":
            return any(self.evaluate(item) for item in argument)
        if name == "Condition":
            return self.condition(argument)
        if name == "Fn::Join":
            separator, items = argument
            return str(separator).join(str(item) for item in self.evaluate(items))
        if name == "Fn::Select":
            index, items = argument
            return self.evaluate(items)[int(self.evaluate(index))]
        if name.startswith("Fn::"):
            raise UnresolvedValue(name)
        return {key: self.evaluate(item) for key, item in value.items()}

    def queue_mapping(self, function: str) -> QueueMapping:
        """The event source mapping that invokes `function`, directly or through its alias."""
        invoked = self._ref(function)
        for spec in self.resources("AWS::Lambda::EventSourceMapping").values():
            properties = self.evaluate(spec["Properties"])
            if str(properties["FunctionName"]).split(":")[0] != invoked:
                continue
            queues = [
                logical_id
                for (logical_id, attribute), value in self.attributes.items()
                if attribute == "Arn" and value == properties["EventSourceArn"]
            ]
            if not queues:
                raise UnresolvedValue(f"event source {properties['EventSourceArn']}")
            batch_size = int(properties.get("BatchSize", SQS_DEFAULT_BATCH_SIZE))
            scaling = properties.get("ScalingConfig") or {}
            maximum = scaling.get("MaximumConcurrency")
            return QueueMapping(queues[0], batch_size, None if maximum is None else int(maximum))
        raise UnresolvedValue(f"no event source mapping invokes {function}")

    def _ref_value(self, name: str) -> str | list[str]:
        """A Ref as CloudFormation gives it: a CommaDelimitedList parameter is a list."""
        value = self._ref(name)
        declared = self.template.get("Parameters", {}).get(name, {})
        if declared.get("Type") == "CommaDelimitedList":
            return [item.strip() for item in value.split(",")]
        return value

    def _ref(self, name: str) -> str:
        if name.endswith(".Alias"):  # SAM: the alias AutoPublishAlias creates (a qualified name)
            function = name.removesuffix(".Alias")
            alias = self.template["Resources"][function]["Properties"]["AutoPublishAlias"]
            return f"{self._ref(function)}:{alias}"
        for table in (self.parameters, self.refs, self.pseudo):
            if name in table:
                return table[name]
        raise UnresolvedValue(f"Ref {name}")

    def _sub(self, argument: Any) -> str:
        if isinstance(argument, list):
            text, variables = argument[0], {k: self.evaluate(v) for k, v in argument[1].items()}
        else:
            text, variables = argument, {}

        def replace(match: re.Match[str]) -> str:
            token = match.group(1)
            if token in variables:
                return str(variables[token])
            if "." in token:
                resource, attribute = token.split(".", 1)
                return str(self.evaluate({"Fn::GetAtt": [resource, attribute]}))
            return self._ref(token)

        return re.sub(r"\$\{([^}!][^}]*)\}", replace, str(text))

    def function_environment(self, logical_id: str) -> dict[str, str]:
        """The environment a function gets: Globals merged with its own variables."""
        globals_env = (
            self.template.get("Globals", {})
            .get("Function", {})
            .get("Environment", {})
            .get("Variables", {})
        )
        function = self.template["Resources"][logical_id]
        own_env = function["Properties"].get("Environment", {}).get("Variables", {})
        environment: dict[str, str] = {}
        for name, raw in {**globals_env, **own_env}.items():
            value = self.evaluate(raw)
            environment[name] = "" if value is None else str(value)
        return environment


def parameter_variables(template: Mapping[str, Any]) -> dict[str, str]:
    """Each template parameter with the variable a setting of it is known by: the function
    variable it feeds (`STREAM_REPLIES: !Ref StreamReplies`), or for a parameter that feeds
    none (`EnableSandbox`, `HeartbeatScheduleExpression`), its name in upper snake case."""
    variables = {name: _upper_snake(name) for name in template.get("Parameters", {})}
    environments = [
        template.get("Globals", {}).get("Function", {}).get("Environment", {}),
        *(
            spec.get("Properties", {}).get("Environment", {})
            for spec in template["Resources"].values()
            if spec.get("Type") == "AWS::Serverless::Function"
        ),
    ]
    for environment in environments:
        for variable, value in environment.get("Variables", {}).items():
            if isinstance(value, Mapping) and value.get("Ref") in variables:
                variables[value["Ref"]] = variable
    return variables


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()
