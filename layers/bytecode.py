"""Ship bytecode for what the functions import: `python bytecode.py LAYER_DIR/python core|llm`.

Lambda cannot write `__pycache__` into a layer (/opt is read-only), so a layer without bytecode
is compiled from source at every cold start: measured here, the webhook's import takes about
twice as long (bench/cold_import.py) and agent_turn's litellm import seconds longer. Bytecode
must come from the runtime's own Python (python3.12: the .pyc format is per version), so this
script runs that interpreter on the layer, imports what the functions import at start-up and
on a first use (the package and the Powertools pieces the handlers use, what the Tracer loads
when X-Ray is active; for `llm` also what web_fetch loads, and a completion with tools against a
closed port on 127.0.0.1 so litellm's provider code loads), and compiles exactly the layer's
modules that were loaded. The rest stays source only: compiling all of litellm would add about
50 MB to a function allowed 250 MB.

The .pyc files are `unchecked-hash`: valid whatever timestamps the layer's zip gives the sources.
`--with DIR` adds directories the imports need that are not in this layer (CoreLayer for
LlmLayer, boto3 as the runtime provides it). Without python3.12 the layer is left as it is, with
a warning.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from runtime_python import RUNTIME_NAME, find_runtime_python

# What functions/*/app.py import beyond the nanobot_lambda package's own imports.
HANDLER_IMPORTS = (
    "aws_lambda_powertools.utilities.batch",
    "aws_lambda_powertools.utilities.batch.types",
    "aws_lambda_powertools.utilities.typing",
)
# What each layer serves on first use rather than at import: Powertools' Tracer in Lambda
# (X-Ray active: agent_turn, the scheduler) from CoreLayer; web_fetch's libraries and the MCP
# client (MCP_SERVERS; jsonschema checks a call's result) from LlmLayer.
FIRST_USE = {
    "core": ("aws_xray_sdk.core",),
    "llm": (
        "readability",
        "markdownify",
        "lxml.html",
        "mcp.client.streamable_http",
        "jsonschema.validators",
    ),
}

PROBE = r"""
import importlib, importlib.util, json, os, pkgutil, py_compile, sys

root, layer = os.path.realpath(sys.argv[1]), sys.argv[2]
handler_imports, first_use = json.loads(sys.argv[3]), json.loads(sys.argv[4])
missing = []

def load(name):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:  # in the other layer (litellm for CoreLayer)
        missing.append(f"{name} ({error.name})")

import nanobot_lambda
for module in pkgutil.walk_packages(nanobot_lambda.__path__, "nanobot_lambda."):
    # operator/ is not deployed; a __main__ module runs its program when imported.
    name = module.name
    if not name.startswith("nanobot_lambda.operator") and not name.endswith(".__main__"):
        load(name)
for name in handler_imports + first_use:
    load(name)
if layer == "llm":
    import litellm
    tool = {"type": "function", "function": {"name": "probe", "parameters": {"type": "object"}}}
    for model in ("openai/probe", "anthropic/probe"):  # the provider code a first call loads
        try:
            litellm.completion(
                model=model, api_base="http://127.0.0.1:9", api_key="probe", num_retries=0,
                timeout=5, messages=[{"role": "user", "content": "probe"}], tools=[tool],
            )
        except Exception:
            pass  # nothing listens there: the code path is what counts
    litellm.token_counter(model="gpt-4o", text="probe")

compiled = size = 0
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None) or ""
    if source.endswith(".py") and os.path.realpath(source).startswith(root + os.sep):
        target = importlib.util.cache_from_source(source)
        py_compile.compile(
            source, cfile=target, doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        compiled += 1
        size += os.path.getsize(target)
print(json.dumps({"compiled": compiled, "bytes": size, "missing": missing}))
"""


def compile_loaded(layer_dir: Path, layer: str, extra: list[Path]) -> int:
    python = find_runtime_python()
    if python is None:
        print(
            f"bytecode.py: WARNING: no {RUNTIME_NAME} found: {layer_dir} ships without bytecode "
            "and is compiled from source at every cold start (set RUNTIME_PYTHON)",
            file=sys.stderr,
        )
        return 0
    path = os.pathsep.join(str(p.resolve()) for p in [layer_dir, *extra])
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": path,
        "PYTHONDONTWRITEBYTECODE": "1",  # only the layer's loaded modules get bytecode
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "AWS_DEFAULT_REGION": "us-east-1",
        "HOME": os.environ.get("HOME", "/tmp"),  # noqa: S108 - only read by libraries
    }
    completed = subprocess.run(  # noqa: S603
        [
            *(python, "-S", "-s", "-c", PROBE, str(layer_dir), layer),
            *(json.dumps(HANDLER_IMPORTS), json.dumps(FIRST_USE[layer])),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        print(completed.stderr[-4000:], file=sys.stderr)
        print(f"bytecode.py: importing the {layer} layer failed", file=sys.stderr)
        return 1
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    print(
        f"bytecode.py: {result['compiled']} modules compiled ({result['bytes'] / 1e6:.1f} MB of "
        f".pyc) with {python}"
    )
    for name in result["missing"]:
        print(f"  not in this layer: {name}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layer_dir", type=Path)
    parser.add_argument("layer", choices=("core", "llm"))
    parser.add_argument("--with", dest="extra", type=Path, action="append", default=[])
    arguments = parser.parse_args(argv)
    return compile_loaded(arguments.layer_dir, arguments.layer, arguments.extra)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
