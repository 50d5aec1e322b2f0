"""moto server (real HTTP on 127.0.0.1) as AWS for the benchmarks; `make bench` skips this file."""

from __future__ import annotations

import logging
import os

from moto.server import ThreadedMotoServer


def start_moto() -> ThreadedMotoServer:
    """Start moto server and point this process's AWS clients at it."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",  # noqa: S106 - moto accepts any credentials
        AWS_DEFAULT_REGION="us-east-1",
    )
    return server
