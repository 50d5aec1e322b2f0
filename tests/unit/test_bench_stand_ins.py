"""The benchmarks' in-process models still take every argument a turn passes: bench/ is not
type-checked and not run by `make test`, so a new keyword of `ChatModel.complete` (as
`reasoning_effort` was) would otherwise break `make bench` unnoticed."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from nanobot_lambda.core.model import ChatModel

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _complete_keywords(source: Path) -> list[set[str]]:
    """The keyword-only parameters of every `complete` method defined in `source`."""
    tree = ast.parse(source.read_text())
    return [
        {argument.arg for argument in node.args.kwonlyargs}
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == "complete"
    ]


@pytest.mark.parametrize("script", ["warm_turn.py", "conversation.py"])
def test_bench_models_accept_every_keyword_of_complete(script: str) -> None:
    signature = inspect.signature(ChatModel.complete)
    wanted = {
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }
    found = _complete_keywords(BENCH / script)
    assert found, f"no complete() in bench/{script}"
    for keywords in found:
        assert wanted <= keywords, f"bench/{script} misses {sorted(wanted - keywords)}"
