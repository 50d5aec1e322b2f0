"""The shape the code keeps (the import rules between the layers are `make lint`'s, with
import-linter): small constructors, and a turn for every kind of job."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from typing import get_args

from pydantic import BaseModel

import nanobot_lambda
from nanobot_lambda.core.jobs import StartJob
from nanobot_lambda.functions.agent_turn.kinds import KINDS

MAX_CONSTRUCTOR_ARGUMENTS = 6


def package_classes() -> list[type]:
    classes = []
    for module_info in pkgutil.walk_packages(nanobot_lambda.__path__, "nanobot_lambda."):
        if module_info.name.endswith("__main__"):
            continue
        module = importlib.import_module(module_info.name)
        classes += [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__
        ]
    return classes


def test_no_class_takes_more_than_six_constructor_arguments() -> None:
    """Records of data (dataclasses, pydantic models) are left out: their fields are their
    constructor. A class that needs more collaborators takes them grouped (e.g. TurnPorts)."""
    too_many = {}
    for cls in package_classes():
        if dataclasses.is_dataclass(cls) or issubclass(cls, BaseModel | Exception):
            continue
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        parameters = [
            parameter
            for parameter in inspect.signature(init).parameters.values()
            if parameter.name != "self"
            and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ]
        if len(parameters) > MAX_CONSTRUCTOR_ARGUMENTS:
            too_many[f"{cls.__module__}.{cls.__qualname__}"] = len(parameters)
    assert too_many == {}


def test_every_kind_of_job_is_declared_once() -> None:
    kinds = {job.model_fields["kind"].default for job in get_args(StartJob)}
    assert kinds == set(KINDS)
    assert all(KINDS[name].name == name for name in KINDS)
