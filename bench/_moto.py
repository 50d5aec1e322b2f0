"""moto server (real HTTP on 127.0.0.1) as AWS for the benchmarks; `make bench` skips this file."""

from __future__ import annotations

import compileall
import os
from pathlib import Path

from moto.server import ThreadedMotoServer

from nanobot_lambda.operator.local.moto_server import start_moto_server


def start_moto() -> ThreadedMotoServer:
    """Start moto server and point this process's AWS clients at it."""
    server, endpoint = start_moto_server()
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",  # noqa: S106 - moto accepts any credentials
        AWS_DEFAULT_REGION="us-east-1",
    )
    return server


def compile_bytecode(tree: Path) -> None:
    """Write the bytecode of the checkout's package and handlers, as a layer build ships it
    (layers/bytecode.py): a cold start on Lambda reads it; here PYTHONDONTWRITEBYTECODE may
    have kept it from being written, and every fresh process would compile the sources."""
    for folder in (tree / "layers" / "nanobot_lambda", tree / "functions"):
        compileall.compile_dir(folder, quiet=1)
