"""The console (issue 40): its API's warm latency, its cold start, and its page's weight.

- Page weight: the one document `GET /console` sends (script and style inline), as sent, and
  gzipped (what a browser receives: the function gzips for a client that accepts it).
- Cold start: fresh interpreters importing `functions/console/app.py` as Lambda's init does,
  with the environment the template gives the function (the bot token read from SSM) and its
  resources on moto server; then the first request (`memory`, with launch data signed for the
  owner). Wall-clock milliseconds, median and p95, and the median CPU time of the process.
- Warm: the handler imported once, then requests to each route the page opens first (me,
  memory, versions, history, schedules, spending), through the handler as API Gateway hands
  them: milliseconds per request, median and p95 per route and over all of them. moto answers
  on loopback in about a millisecond; DynamoDB and S3 in the function's region take longer.

    make bench            or            .venv/bin/python bench/console.py [runs]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3
from _moto import compile_bytecode, start_moto

from nanobot_lambda.core import launch_data
from nanobot_lambda.operator.local.cfn import TemplateContext, load_template
from nanobot_lambda.operator.local.resources import create_resources

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "infra" / "template.yaml"
APP = ROOT / "functions" / "console" / "app.py"
BOT_TOKEN = "1:bench-console"  # noqa: S105 - a local test value
OWNER = 111111111
RUNS = 15
WARM_REQUESTS = 40  # per route
ROUTES = ("me", "memory", "memory/versions", "history", "schedules", "spending")

PROBE = """
import json, sys, time
start, start_cpu = time.perf_counter(), time.process_time()
import importlib.util
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
result = {
    "ms": (time.perf_counter() - start) * 1000,
    "cpu_ms": (time.process_time() - start_cpu) * 1000,
    "heavy": sorted({n.split(".")[0] for n in sys.modules} & {"litellm", "openai", "tiktoken"}),
}

class Context:  # what Powertools reads of Lambda's context
    function_name, memory_limit_in_mb, aws_request_id = "console", 256, "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:console"
    def get_remaining_time_in_millis(self):
        return 15_000

event = json.loads(sys.argv[2])
start = time.perf_counter()
response = module.handler(event, Context())
result["first_ms"] = (time.perf_counter() - start) * 1000
assert response["statusCode"] == 200, response
print(json.dumps(result))
"""


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def api_event(route: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    fields = {
        "user": json.dumps({"id": OWNER, "first_name": "Ada"}),
        "auth_date": str(int(time.time())),
        "chat_type": "private",
    }
    path = f"/console/api/{route}"
    return {
        "version": "2.0",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"authorization": f"tma {launch_data.sign(fields, BOT_TOKEN)}"},
        "requestContext": {"http": {"method": "POST", "path": path}},
        "body": json.dumps(body or {}),
        "isBase64Encoded": False,
    }


def start_aws() -> tuple[Any, dict[str, str]]:
    server = start_moto()
    context = TemplateContext(
        load_template(TEMPLATE), parameters={"AllowFrom": str(OWNER), "LlmModel": "openai/bench"}
    )
    create_resources(context, "bench-console")
    boto3.client("ssm").put_parameter(
        Name=context.parameters["TelegramBotTokenParameter"],
        Value=BOT_TOKEN,
        Type="SecureString",
        Overwrite=True,
    )
    environment = {**os.environ, **context.function_environment("ConsoleFunction")}
    bucket = context.refs["WorkspaceBucket"]
    s3 = boto3.client("s3")
    history = "".join(
        f"[2026-11-{day:02d} 10:00] Talked about tea number {day} and the bakery's books.\n\n"
        for day in range(1, 29)
    )
    for _ in range(5):  # a few versions of MEMORY.md
        s3.put_object(Bucket=bucket, Key="workspace/memory/MEMORY.md", Body=b"# Memory\n- tea\n")
    s3.put_object(Bucket=bucket, Key="workspace/memory/HISTORY.md", Body=history.encode())
    return server, environment


def page_weight() -> None:
    from nanobot_lambda.functions.console.page import ConsolePage

    page = ConsolePage()
    print(
        f"Page weight: {len(page.html.encode()) / 1000:.1f} KB as sent, "
        f"{len(page.response({'accept-encoding': 'gzip'})['body']) * 3 / 4 / 1000:.1f} KB "
        "gzipped (base64 in the function's answer, binary on the wire; budget 150 KB)"
    )


def cold_start(environment: dict[str, str], runs: int) -> None:
    results = []
    for _ in range(runs):
        completed = subprocess.run(  # noqa: S603 - this interpreter, a fixed probe
            [sys.executable, "-c", PROBE, str(APP), json.dumps(api_event("memory"))],
            cwd=APP.parent,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"the console failed to start:\n{completed.stderr[-3000:]}")
        results.append(json.loads(completed.stdout.strip().splitlines()[-1]))
    imports = [r["ms"] for r in results]
    firsts = [r["ms"] + r["first_ms"] for r in results]
    print(f"Cold start, ms ({runs} fresh interpreters, Python {sys.version.split()[0]}):")
    print(
        f"  import (init)           median {statistics.median(imports):6.0f}  p95 "
        f"{p95(imports):6.0f}  cpu median {statistics.median(r['cpu_ms'] for r in results):5.0f}"
    )
    print(
        f"  + first request (memory) median {statistics.median(firsts):5.0f}  p95 "
        f"{p95(firsts):6.0f}  loads litellm: {'yes' if results[0]['heavy'] else 'no'}"
    )


def warm(environment: dict[str, str]) -> None:
    os.environ.update(environment)
    from nanobot_lambda.operator.local.runtime import LocalLambdaContext, load_handler_module

    module = load_handler_module(APP.parent, "console_bench")
    context = LocalLambdaContext("console", 15, 256)
    every: list[float] = []
    print(f"Warm API requests, ms ({WARM_REQUESTS} per route, moto server as AWS):")
    for route in ROUTES:
        body = {"query": "tea bakery"} if route == "history" else {}
        module.handler(api_event(route, body), context)  # the route's first use
        times = []
        for _ in range(WARM_REQUESTS):
            event = api_event(route, body)
            start = time.perf_counter()
            response = module.handler(event, context)
            times.append((time.perf_counter() - start) * 1000)
            assert response["statusCode"] == 200, response
        every += times
        print(f"  {route:<16} median {statistics.median(times):6.1f}  p95 {p95(times):6.1f}")
    print(f"  {'all routes':<16} median {statistics.median(every):6.1f}  p95 {p95(every):6.1f}")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    compile_bytecode(ROOT)
    server, environment = start_aws()
    try:
        page_weight()
        cold_start(environment, runs)
        warm(environment)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
