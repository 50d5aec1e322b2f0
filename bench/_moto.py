"""moto server (real HTTP on 127.0.0.1) as AWS for the benchmarks; `make bench` skips this file."""

from __future__ import annotations

import os

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
