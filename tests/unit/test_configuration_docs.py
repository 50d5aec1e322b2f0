"""Every variable the settings models read is documented in the README's configuration table
and declared on the function in infra/template.yaml (Lambda and `sam local invoke --env-vars`
can only set declared variables)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from nanobot_lambda.operator.local.cfn import load_template
from nanobot_lambda.settings import (
    AgentSettings,
    ConsoleSettings,
    OperatorSettings,
    SchedulerSettings,
    WebhookSettings,
    _Settings,
)
from tests.conftest import ROOT, TEMPLATE

# Variables read by the libraries (Powertools, litellm, tiktoken), documented in the same table.
LIBRARY_PREFIXES = ("POWERTOOLS_", "LITELLM_", "TIKTOKEN_")

FUNCTIONS = [
    ("WebhookFunction", WebhookSettings),
    ("AgentTurnFunction", AgentSettings),
    ("SchedulerFunction", SchedulerSettings),
    ("ConsoleFunction", ConsoleSettings),
]


def variables(settings: type[_Settings]) -> set[str]:
    return {field.alias or name for name, field in settings.model_fields.items()}


def readme_table_variables() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return names


def declared(template: dict[str, Any], logical_id: str) -> set[str]:
    glob = template["Globals"]["Function"]["Environment"]["Variables"]
    own = template["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
    return set(glob) | set(own)


@pytest.mark.parametrize(("logical_id", "settings"), FUNCTIONS)
def test_every_setting_is_in_the_readme_table(logical_id: str, settings: type[_Settings]) -> None:
    assert variables(settings) - readme_table_variables() == set()


@pytest.mark.parametrize(("logical_id", "settings"), FUNCTIONS)
def test_every_setting_is_declared_on_its_function(
    logical_id: str, settings: type[_Settings]
) -> None:
    template = load_template(TEMPLATE)
    assert variables(settings) - declared(template, logical_id) == set()


def test_the_readme_table_documents_nothing_that_does_not_exist() -> None:
    known = set().union(*(variables(settings) for _, settings in FUNCTIONS))
    known |= variables(OperatorSettings)  # the CLI's (TURN_DLQ_URL), in the same table
    known |= {f"{name}_PARAM" for name in known} | {f"{name}_SECRET_ARN" for name in known}
    libraries = {name for name in readme_table_variables() if name.startswith(LIBRARY_PREFIXES)}
    assert readme_table_variables() - known - libraries == set()


def test_every_cli_setting_is_in_the_readme_table() -> None:
    assert variables(OperatorSettings) - readme_table_variables() == set()


def env_example_defaults() -> dict[str, str]:
    """`# NAME=value` lines in the sections of .env.example headed "defaults shown" (an empty
    value shows none; other sections show examples)."""
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    shown: dict[str, str] = {}
    for section in text.split("\n# --- ")[1:]:
        if "defaults shown" in section.splitlines()[0]:
            lines = re.findall(r"^# ([A-Z][A-Z0-9_]+)=(\S+)", section, flags=re.MULTILINE)
            shown.update(lines)
    return shown


def test_env_example_shows_the_real_defaults() -> None:
    """A default .env.example shows is the settings' own, or (a template parameter `chat`
    takes from .env) the template's: a user who copies it changes nothing by it."""
    from nanobot_lambda.operator.cli.local import PARAMETER_ALIASES
    from nanobot_lambda.operator.local.cfn import parameter_variables

    template_parameters = {
        variable: parameter
        for parameter, variable in parameter_variables(load_template(TEMPLATE)).items()
    } | PARAMETER_ALIASES
    fields = {
        field.alias or name: field
        for settings in (*(settings for _, settings in FUNCTIONS), OperatorSettings)
        for name, field in settings.model_fields.items()
    }
    parameters = load_template(TEMPLATE)["Parameters"]
    shown = env_example_defaults()
    assert {"HISTORY_WINDOW", "MAX_TOOL_ITERATIONS", "LLM_MAX_TOKENS", "LOG_LEVEL"} <= set(shown)
    for variable, value in shown.items():
        if variable in fields:
            default = fields[variable].default
            assert default is not None, variable
            assert type(default)(value) == default, variable
        else:
            assert variable in template_parameters, f"{variable} is no setting"
            assert parameters[template_parameters[variable]]["Default"] == value, variable
