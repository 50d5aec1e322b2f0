"""No per-job state in a module or a service (issue 38): agent_turn's services are built once per
container and hold clients, stores and caches only; whatever is one job's (its subject, its
context, its run, its meter, the model its chat chose, its loop) is in the job's context
(tools/context.py), passed down the turn and to each tool, and gone with the job.

After every kind of job has run in every one of whose it is (the isolation table's rows), nothing
reachable from the dispatcher's services, nor from a module under functions/ or tools/, holds
anything of a job. The walk goes through agent_turn's own objects (the core's, the functions',
the tools'), their containers and closures; it stops at the ports (the adapters and the tests'
stand-ins for them), which store what a job made on purpose.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nanobot_lambda.functions
import nanobot_lambda.tools
from nanobot_lambda.adapters.telegram.inbound import InboundMessage
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.core.agent import AgentLoop
from nanobot_lambda.core.consolidation import Consolidator
from nanobot_lambda.core.model_choice import ModelChoice
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.usage import JobMeter
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.tools.context import AnswerNotes, JobContext
from tests.unit.test_isolation import EVERYONE, ROWS, deliver, prepared, runs_for

# What is one job's: none of it may outlive the job in a service or a module.
A_JOBS = (
    JobContext,
    Subject,
    TurnRun,
    JobMeter,
    AnswerNotes,
    QueuedJob,
    InboundMessage,
    Update,
    ModelChoice,
    AgentLoop,
    Consolidator,
)
# Whose objects the walk goes through: agent_turn's own (the adapters are the ports' side).
OWN = ("nanobot_lambda.core.", "nanobot_lambda.functions.", "nanobot_lambda.tools.")
PACKAGES = (nanobot_lambda.functions, nanobot_lambda.tools)


def modules() -> list[types.ModuleType]:
    found = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            found.append(importlib.import_module(info.name))
    return found


def held(root: object, where: str) -> Iterator[tuple[str, object]]:
    """(where, what) for each object of a job's reachable from `root`."""
    seen: set[int] = set()
    todo: list[tuple[str, object]] = [(where, root)]
    while todo:
        path, value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, A_JOBS):
            yield path, value
            continue
        todo += [(f"{path}{step}", item) for step, item in _inside(value)]


def _inside(value: object) -> Iterator[tuple[str, object]]:
    if isinstance(value, (str, bytes, int, float, type, types.ModuleType)) or value is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"[{key!r}]", key
            yield f"[{key!r}]", item
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield from ((f"[{index}]", item) for index, item in enumerate(value))
    elif isinstance(value, types.MethodType):
        yield ".__self__", value.__self__
        yield ".__func__", value.__func__
    elif isinstance(value, types.FunctionType):
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=True):
            try:
                yield f"<{name}>", cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
        yield ".__defaults__", value.__defaults__
    elif isinstance(value, functools.partial):
        yield ".func", value.func
        yield ".args", value.args
        yield ".keywords", value.keywords
    elif type(value).__module__.startswith(OWN):
        for name in _attributes(value):
            yield f".{name}", getattr(value, name)


def _attributes(value: object) -> list[str]:
    names = list(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        names += [name for name in getattr(cls, "__slots__", ()) if hasattr(value, name)]
    return names


@pytest.fixture(scope="module")
def every_job_run() -> list[Any]:
    """A dispatcher for each row, after the row's job ran for each of whose it is."""
    bots = []
    for row in ROWS:
        bot = prepared(row)
        for who in EVERYONE:
            if runs_for(row, who):
                bot.model.replies.extend(prepared(row).model.replies)
                deliver(bot, row, who)
        bots.append(bot)
    return bots


def test_no_service_holds_anything_of_a_job_after_it(every_job_run: list[Any]) -> None:
    for bot in every_job_run:
        assert bot.channel.sent or bot.queue.sent, "the row's jobs ran"
        found = list(held(bot.service, "dispatcher"))
        assert found == [], found[:5]


def test_no_module_holds_anything_of_a_job_after_it(every_job_run: list[Any]) -> None:
    for module in modules():
        found = list(held(vars(module), module.__name__))
        assert found == [], found[:5]


def test_no_module_keeps_state_of_its_own() -> None:
    """A module's names are bound once, at import: none is declared `global` and rebound."""
    for module in modules():
        source = Path(sys.modules[module.__name__].__file__ or "").read_text()
        rebound = [
            node.names for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Global)
        ]
        assert rebound == [], (module.__name__, rebound)
