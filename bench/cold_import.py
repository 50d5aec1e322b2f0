"""Cold start of each handler: its module import in fresh interpreters, then its first request.

Each run is a new Python process that imports `functions/<name>/app.py` the way Lambda's init
phase does (settings built, secrets read, clients created), timed from the first line of the
import to its end (interpreter start-up excluded), with the environment the template gives the
function and its resources and SSM secrets on moto server. For the webhook the same process
then handles one Telegram update (a text message: the idempotency record and one SQS
SendMessage), timed separately, so a cost moved from the import into the first request shows
up. The webhook is measured twice: secret token given directly, and read from SSM at start-up as
deployed (`TELEGRAM_SECRET_TOKEN_PARAM`). Figures are wall-clock milliseconds, median and p95,
with the median CPU time of the process beside them (less sensitive to other load on a shared
machine). Then the webhook's top import-time offenders (`python -X importtime`, median of 5).

With the Lambda runtime's Python (python3.12) and `make build-check` output present, the webhook
is also imported the way Lambda runs it: python3.12 with only `build/layers/CoreLayer` and the
boto3 of `build/runtime` on its path, nothing written beside the modules (/opt is read-only).

agent_turn's start by part (issue 31), on a workspace with the default files and 20 skills:
- its import split by what pulled each module in (`python -X importtime`, self times summed:
  litellm and what it imports, boto3, Powertools with the X-Ray SDK, pydantic, the package's own
  modules, the rest), and the init's own work beside the imports (settings and SSM, clients,
  the turn machinery): the import's wall time under importtime less the imports' self times;
- the first reads, what the first turn reads from the workspace before its model request (the
  listing and the system prompt's files), after init: S3 requests and milliseconds here, and
  what those requests would take at AWS_REQUEST_MS each from a Lambda in the bucket's region
  (moto on loopback answers in about a millisecond);
- whether the cold-start prefetch (started before the imports) had finished when init ended.
`--tree DIR` runs another checkout's handlers (with `PYTHONPATH=DIR/layers`), e.g. main's, for
the figures before a change.

    make bench            or            .venv/bin/python bench/cold_import.py [runs] [--tree DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import boto3
from _moto import compile_bytecode, start_moto
from moto.server import ThreadedMotoServer

from nanobot_lambda.operator.local.cfn import TemplateContext, load_template
from nanobot_lambda.operator.local.resources import create_resources

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers"))
from runtime_python import find_runtime_python  # noqa: E402

RUNS = 15
AGENT_RUNS = 5  # agent_turn imports litellm: seconds per run
IMPORTTIME_RUNS = 5
SKILLS = 20  # in the workspace agent_turn's first reads see
AWS_REQUEST_MS = 20  # an S3 request from Lambda in the bucket's region, roughly
TEMPLATE = ROOT / "infra" / "template.yaml"
SECRET = "bench-secret"  # noqa: S105 - a local test value
FUNCTIONS = {"webhook": "WebhookFunction", "scheduler": "SchedulerFunction"}
FUNCTIONS["agent_turn"] = "AgentTurnFunction"
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
if len(sys.argv) > 2:  # handle one request (helpers imported outside the timings)
    import os

    # What Powertools reads of Lambda's context (no nanobot_lambda.operator.local here).
    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "webhook", 256, "bench"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:webhook"
        def get_remaining_time_in_millis(self):
            return 10_000

    event = json.loads(open(sys.argv[2]).read())
    update = json.loads(event["body"])
    update["update_id"] += os.getpid()  # a new update each run: queued, not a repeat
    event["body"] = json.dumps(update)
    context = Context()
    start = time.perf_counter()
    response = module.handler(event, context)
    result["first_ms"] = (time.perf_counter() - start) * 1000
    assert response["statusCode"] == 200, response
print(json.dumps(result))
"""


# agent_turn: its import as PROBE times it, then the first turn's reads of the workspace before
# its model request (the listing and the system prompt's files), counted and timed apart.
AGENT_PROBE = PROBE.replace(
    "print(json.dumps(result))",
    """
import os
import boto3
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.context import ContextBuilder

prefetch = getattr(module, "prefetch", None)  # the cold-start prefetch, where there is one
result["prefetched_by_init_end"] = prefetch is not None and prefetch.wait(0)
s3 = getattr(module, "s3", None) or boto3.client("s3")  # before: the turn's client, made at init
requests = []
s3.meta.events.register("before-send.s3", lambda **kw: requests.append(kw["event_name"]))
arguments = {"prefetch": prefetch} if prefetch is not None else {}
start = time.perf_counter()
workspace = S3Workspace(os.environ["WORKSPACE_BUCKET"], s3, **arguments)
workspace.refresh()
ContextBuilder().system_prompt(workspace)
result["reads_ms"] = (time.perf_counter() - start) * 1000
result["reads"] = len(requests)
result["gets"] = sum(name.endswith("GetObject") for name in requests)
print(json.dumps(result))""",
)
# What pulled a module in, for the parts of agent_turn's start: (group, top-level names).
PARTS = (
    ("litellm (and what it imports)", ("litellm",)),
    ("boto3, botocore", ("boto3", "botocore", "s3transfer")),
    ("Powertools, X-Ray SDK", ("aws_lambda_powertools", "aws_xray_sdk")),
    ("pydantic, pydantic-settings", ("pydantic", "pydantic_core", "pydantic_settings")),
)
OWN_PART = "nanobot_lambda's own modules"
OTHER_PART = "other imports (standard library...)"


def run_probe(
    python: str,
    app: Path,
    env: dict[str, str],
    event: Path | None = None,
    flags: tuple[str, ...] = (),
    probe: str = PROBE,
) -> dict[str, Any]:
    arguments = [python, *flags, "-c", probe, str(app)]
    if event is not None:
        arguments.append(str(event))
    completed = subprocess.run(  # noqa: S603
        arguments, cwd=app.parent, env=env, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{app} failed to start:\n{completed.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def row(label: str, results: list[dict[str, Any]]) -> None:
    imports = [r["ms"] for r in results]
    cpu = statistics.median(r["cpu_ms"] for r in results)
    line = f"  {label:<36} {statistics.median(imports):7.0f} {p95(imports):6.0f} {cpu:6.0f}"
    if "first_ms" in results[0]:
        firsts = [r["ms"] + r["first_ms"] for r in results]
        line += f"   {statistics.median(firsts):7.0f} {p95(firsts):6.0f}"
    heavy = ", ".join(results[0]["heavy"])
    print(line + (f"   loads {heavy}" if heavy else ""))


def import_once(app: Path, env: dict[str, str]) -> tuple[list[tuple[str, int, int]], float]:
    """One handler import under `python -X importtime`: (raw name, self µs, cumulative µs) per
    module, children before their parent, and the import's wall milliseconds."""
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-X", "importtime", "-c", PROBE, str(app)],
        cwd=app.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, cumulative, name = line[len("import time:") :].split("|")
        rows.append((name.rstrip(), int(own), int(cumulative)))
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    return rows, float(result["ms"])


def importtime(app: Path, env: dict[str, str], runs: int) -> list[dict[str, tuple[int, int]]]:
    """Per run: module -> (self µs, cumulative µs) for modules the handler import pulled in."""
    return [
        {name: (own, cumulative) for name, own, cumulative in import_once(app, env)[0]}
        for _ in range(runs)
    ]


def parts_of_start(app: Path, env: dict[str, str], runs: int) -> list[dict[str, float]]:
    """Per run: milliseconds of agent_turn's import by part (PARTS), and the init's own work."""
    measured = []
    for _ in range(runs):
        rows, import_ms = import_once(app, env)
        parts: dict[str, float] = defaultdict(float)
        # A module counts for the outermost import outside the package that pulled it in.
        outer: list[str | None] = []  # per depth: the group of the enclosing import, if any
        for raw_name, own, _ in reversed(rows):  # parents before their children
            # Names are indented two spaces per nesting level after one separating space.
            depth = (len(raw_name) - len(raw_name.lstrip()) - 1) // 2
            del outer[depth:]
            enclosing = outer[-1] if outer else None
            top = raw_name.strip().split(".")[0]
            group = enclosing or next(
                (label for label, tops in PARTS if top in tops),
                OWN_PART if top == "nanobot_lambda" else None,
            )
            parts[group or OTHER_PART] += own / 1000
            outer.append(None if group == OWN_PART else group or OTHER_PART)
        parts["init's own work (settings, SSM, clients, turn machinery)"] = import_ms - sum(
            parts.values()
        )
        measured.append(dict(parts))
    return measured


def print_parts(runs: list[dict[str, float]]) -> None:
    print(f"  agent_turn's start by part, ms (python -X importtime, median of {len(runs)}):")
    labels = [label for label, _ in PARTS] + [OWN_PART, OTHER_PART]
    labels += [label for label in runs[0] if label not in labels]
    for label in labels:
        print(f"    {statistics.median(run.get(label, 0.0) for run in runs):7.0f}  {label}")


def print_first_reads(results: list[dict[str, Any]]) -> None:
    reads = statistics.median(r["reads"] for r in results)
    gets = statistics.median(r["gets"] for r in results)
    here = statistics.median(r["reads_ms"] for r in results)
    prefetched = sum(r["prefetched_by_init_end"] for r in results)
    print(
        f"  agent_turn's first reads after init (workspace listing and system prompt files, "
        f"{SKILLS} skills): {reads:.0f} S3 requests ({gets:.0f} GET), {here:.0f} ms here, "
        f"about {reads * AWS_REQUEST_MS:.0f} ms at {AWS_REQUEST_MS} ms a request on AWS; "
        f"prefetch finished within init in {prefetched} of {len(results)} runs"
    )


def print_offenders(runs: list[dict[str, tuple[int, int]]], count: int = 10) -> None:
    by_name: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for modules in runs:
        for name, times in modules.items():
            by_name[name].append(times)
    cumulative = {n: statistics.median(t[1] for t in v) for n, v in by_name.items()}
    own = {n.strip(): statistics.median(t[0] for t in v) for n, v in by_name.items()}
    # Names are indented two spaces per nesting level after one separating space.
    top_level = {n.strip(): c for n, c in cumulative.items() if not n.startswith("   ")}
    print(f"  imports made by the handler module, cumulative ms (median of {len(runs)}):")
    for name, micros in sorted(top_level.items(), key=lambda kv: -kv[1])[:count]:
        print(f"    {micros / 1000:7.1f}  {name}")
    print("  modules by their own (self) time, ms:")
    for name, micros in sorted(own.items(), key=lambda kv: -kv[1])[:count]:
        print(f"    {micros / 1000:7.1f}  {name}")


def seed_workspace_with_skills(context: TemplateContext) -> None:
    """The default workspace and SKILLS skills: what a first turn reads before its request."""
    from nanobot_lambda.adapters.aws.clients import s3_client
    from nanobot_lambda.adapters.aws.workspace import S3Workspace
    from nanobot_lambda.core.workspace import seed_workspace

    workspace = S3Workspace(context.refs["WorkspaceBucket"], s3_client())
    seed_workspace(workspace)
    for n in range(SKILLS):
        body = f"---\nname: chore-{n:03d}\ndescription: Does chore number {n}.\n---\n# {n}\n"
        workspace.write(f"skills/chore-{n:03d}/SKILL.md", body.encode())


def start_aws() -> tuple[ThreadedMotoServer, TemplateContext]:
    """moto server with the template's resources and secrets: each function's environment is
    then the deployed one (secrets as SSM references)."""
    server = start_moto()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    parameters = {"AllowFrom": "111111111", "LlmModel": "openai/bench"}
    context = TemplateContext(load_template(TEMPLATE), parameters=parameters)
    create_resources(context, "bench")
    seed_workspace_with_skills(context)
    ssm = boto3.client("ssm")
    for parameter, value in (
        ("TelegramSecretTokenParameter", SECRET),
        ("TelegramBotTokenParameter", "1:bench"),
    ):
        name = context.parameters[parameter]
        ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
    return server, context


def moto_first_request_ms(context: TemplateContext) -> float:
    """moto's answer time for what the webhook's first request sends (warm client)."""
    sqs, dynamodb = boto3.client("sqs"), boto3.client("dynamodb")
    table = context.refs["IdempotencyTable"]
    times = []
    for n in range(20):
        start = time.perf_counter()
        dynamodb.put_item(TableName=table, Item={"id": {"S": f"bench-{n}"}})
        dynamodb.update_item(
            TableName=table,
            Key={"id": {"S": f"bench-{n}"}},
            UpdateExpression="SET s = :s",
            ExpressionAttributeValues={":s": {"S": "done"}},
        )
        sqs.send_message(
            QueueUrl=context.refs["TurnQueue"],
            MessageBody="x",
            MessageGroupId="g",
            MessageDeduplicationId=f"m{n}",
        )
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def webhook_event(directory: Path) -> Path:
    from nanobot_lambda.operator.local.stack import http_event

    fixture = ROOT / "tests" / "fixtures" / "telegram" / "text_private.json"
    update = json.loads(fixture.read_text())
    path = directory / "event.json"
    path.write_text(json.dumps(http_event(json.dumps(update), secret=SECRET)))
    return path


def main() -> None:
    arguments = sys.argv[1:]
    tree = ROOT
    if "--tree" in arguments:
        at = arguments.index("--tree")
        tree = Path(arguments[at + 1]).resolve()
        del arguments[at : at + 2]
    runs = int(arguments[0]) if arguments else RUNS
    compile_bytecode(tree)  # the imports read it, as on Lambda
    server, context = start_aws()
    env = {
        name: {**os.environ, **context.function_environment(logical_id)}
        for name, logical_id in FUNCTIONS.items()
    }
    if tree != ROOT:
        for variables in env.values():
            variables["PYTHONPATH"] = str(tree / "layers")
    app = {name: tree / "functions" / name / "app.py" for name in FUNCTIONS}
    direct = {**env["webhook"], "TELEGRAM_SECRET_TOKEN": SECRET}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            event = webhook_event(Path(scratch))
            print(
                f"Handler cold start, ms ({runs} fresh interpreters; agent_turn {AGENT_RUNS}), "
                f"Python {sys.version.split()[0]}, moto server as AWS; code: {tree}"
            )
            print(
                f"  {'':<36} {'import':>7} {'p95':>6} {'cpu':>6}   {'+first request':>14}\n"
                f"  {'':<36} {'median':>7} {'':>6} {'median':>6}   {'median':>7} {'p95':>6}"
            )
            python = sys.executable
            row(
                "webhook (secret in env)",
                [run_probe(python, app["webhook"], direct, event) for _ in range(runs)],
            )
            row(
                "webhook (secret from SSM, deployed)",
                [run_probe(python, app["webhook"], env["webhook"], event) for _ in range(runs)],
            )
            row(
                "scheduler (deployed)",
                [run_probe(python, app["scheduler"], env["scheduler"]) for _ in range(runs)],
            )
            agent_runs = [
                run_probe(python, app["agent_turn"], env["agent_turn"], probe=AGENT_PROBE)
                for _ in range(AGENT_RUNS)
            ]
            row("agent_turn (deployed)", agent_runs)
            runtime_row(app["webhook"], direct, event, runs)
            moto_ms = moto_first_request_ms(context)
            print(f"  moto's own answers inside '+first request' (warm client): {moto_ms:.1f} ms")
            print_first_reads(agent_runs)
            print_parts(parts_of_start(app["agent_turn"], env["agent_turn"], AGENT_RUNS))
        print("\nwebhook (secret in env): top import-time offenders (python -X importtime)")
        print_offenders(importtime(app["webhook"], direct, IMPORTTIME_RUNS))
    finally:
        server.stop()


def runtime_row(webhook: Path, env: dict[str, str], event: Path, runs: int) -> None:
    """The webhook as Lambda loads it: python3.12, the built CoreLayer and the runtime's boto3."""
    python = find_runtime_python()
    core = ROOT / "build" / "layers" / "CoreLayer" / "python"
    runtime = ROOT / "build" / "runtime" / "python"
    if python is None or not core.is_dir() or not runtime.is_dir():
        print("  (python3.12 or `make build-check` output missing: no run on the built layers)")
        return
    isolated = {
        key: value for key, value in env.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))
    }
    isolated["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as scratch:
        # The same layer without the bytecode layers/bytecode.py adds: compiled at every start.
        source_only = Path(scratch) / "python"
        shutil.copytree(core, source_only, ignore=shutil.ignore_patterns("__pycache__"))
        for label, layer in (("", core), (", no bytecode", source_only)):
            isolated["PYTHONPATH"] = f"{webhook.parent}:{layer}:{runtime}"
            results = [
                run_probe(python, webhook, isolated, event, flags=("-S", "-s")) for _ in range(runs)
            ]
            row(f"webhook on build/ (3.12{label})", results)


if __name__ == "__main__":
    main()
