"""Cold-start import cost of each handler: median over fresh interpreters, plus heavy modules.

Each run is a new Python process that imports `functions/<name>/app.py` the way Lambda's init
phase does (settings built, clients created; no network is touched). Prints a table; also the
webhook's top import-time offenders from `python -X importtime`.

    make bench            or            .venv/bin/python bench/cold_import.py [runs]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "TELEGRAM_BOT_TOKEN": "1:bench",
    "TELEGRAM_SECRET_TOKEN": "bench",
    "ALLOW_FROM": "1",
    "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/bench.fifo",
    "WORKSPACE_BUCKET": "bench-bucket",
    "SESSIONS_TABLE": "bench-sessions",
    "LLM_MODEL": "openai/bench",
    "JOBS_TABLE": "bench-jobs",
    "SCHEDULE_GROUP": "bench-group",
    "SCHEDULER_TARGET_ARN": "arn:aws:lambda:us-east-1:1:function:bench",
    "SCHEDULER_ROLE_ARN": "arn:aws:iam::1:role/bench",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
PROBE = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("app", Path("functions") / sys.argv[1] / "app.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
elapsed = time.perf_counter() - start
heavy = sorted({n.split(".")[0] for n in sys.modules} & {"litellm", "openai", "tiktoken", "moto"})
print(json.dumps({"ms": elapsed * 1000, "heavy": heavy}))
"""


def run(name: str) -> dict[str, object]:
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-c", PROBE, name],
        cwd=ROOT,
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def top_imports(name: str, count: int = 8) -> list[tuple[int, str]]:
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-X", "importtime", "-c", PROBE, name],
        cwd=ROOT,
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, module = (part.strip() for part in line[len("import time:") :].split("|"))
        if not module.startswith(" "):  # top-level imports only
            rows.append((int(cumulative), module.strip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"Handler cold import ({runs} fresh interpreters each, Python {sys.version.split()[0]})")
    print(f"{'handler':<12} {'median ms':>10} {'max ms':>8}  heavy modules loaded")
    for name in ("webhook", "scheduler", "agent_turn"):
        results = [run(name) for _ in range(runs)]
        times = [float(str(r["ms"])) for r in results]
        heavy = ", ".join(str(m) for m in results[0]["heavy"]) or "none"  # type: ignore[attr-defined]
        print(f"{name:<12} {statistics.median(times):>10.0f} {max(times):>8.0f}  {heavy}")
    print("\nwebhook: top-level imports by cumulative time (python -X importtime)")
    for microseconds, module in top_imports("webhook"):
        print(f"  {microseconds / 1000:>7.1f} ms  {module}")


if __name__ == "__main__":
    main()
