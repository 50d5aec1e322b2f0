"""The code sandbox: its cold start and a warm `print(1)` round trip.

Cold: a fresh interpreter imports `functions/sandbox/app.py` (as Lambda's init phase does) and
handles one request, `print(1)`; timed from before the import to the answer (interpreter
start-up excluded). Warm: the same handler, already loaded, answers `print(1)` again and again
(each run still empties its folder, sweeps stray processes and starts a fresh Python for the
code: that is the floor of every exec call). With python3.12 and `make build-check` output, the
cold start is also measured as Lambda runs it: only `build/layers/CoreLayer` on the path.
Through the local stack, agent_turn's call also crosses the Invoke API; in AWS add Lambda's own
invoke overhead (tens of ms warm).

    make bench            or            .venv/bin/python bench/sandbox.py [runs]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers"))
from runtime_python import find_runtime_python  # noqa: E402

RUNS = 10
WARM_RUNS = 30
PRINT_ONE = {"version": 1, "language": "python", "code": "print(1)"}
CHILD = r"""
import json, sys, time
start = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("sandbox_app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
result = module.handler(json.loads(sys.argv[2]), None)
assert result["ok"] and result["stdout"] == "1\n", result
done = time.perf_counter()
warm = []
for _ in range(int(sys.argv[3])):
    began = time.perf_counter()
    module.handler(json.loads(sys.argv[2]), None)
    warm.append((time.perf_counter() - began) * 1000)
print(json.dumps({"import": (imported - start) * 1000, "first": (done - start) * 1000,
                  "warm": warm}))
"""


def measure(python: str, path: list[Path], warm_runs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as root:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join(str(p) for p in path),
            "SANDBOX_ROOT": root,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        completed = subprocess.run(  # noqa: S603
            [
                python,
                "-c",
                CHILD,
                str(ROOT / "functions" / "sandbox" / "app.py"),
                json.dumps(PRINT_ONE),
                str(warm_runs),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
    measured: dict[str, object] = json.loads(completed.stdout)
    return measured


def figures(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):7.1f} ms   p95 {p95:7.1f} ms"


def report(label: str, python: str, path: list[Path], runs: int) -> None:
    colds = [measure(python, path, 0 if n else WARM_RUNS) for n in range(runs)]
    first = [float(cold["first"]) for cold in colds]  # type: ignore[arg-type]
    imported = [float(cold["import"]) for cold in colds]  # type: ignore[arg-type]
    warm = [float(ms) for ms in colds[0]["warm"]]  # type: ignore[union-attr]
    print(f"{label}")
    print(f"  cold: handler import          {figures(imported)}   ({runs} runs)")
    print(f"  cold: import + print(1)       {figures(first)}")
    print(f"  warm: print(1) round trip     {figures(warm)}   ({len(warm)} runs)")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    print("Code sandbox (functions/sandbox/app.py), the handler in its own process")
    report(f"  {sys.executable} (development)", sys.executable, [ROOT / "layers"], runs)
    python = find_runtime_python()
    layer = ROOT / "build" / "layers" / "CoreLayer" / "python"
    if python is not None and layer.is_dir():
        report(f"  {python} with only build/layers/CoreLayer", python, [layer], runs)
    else:
        print("  (python3.12 or `make build-check` output missing: the Lambda-like run skipped)")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s)")
