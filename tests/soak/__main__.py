"""`make soak`: the chaos soak at size, seed after seed, one figure line each.

    python -m tests.soak --seeds 1 2 3 --chats 30 --msgs 8

Prints `seed chats msgs dup lost out_of_order dlq window crashes elapsed session stuck` per
seed, the failures of each seed that did not pass (chat, message, what the user saw, what the
session holds), and exits 1 if any seed failed. The agent_turn worker's logs of each seed are
kept in --log-dir.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.soak.checker import Figures
from tests.soak.harness import run_soak
from tests.soak.plan import SoakPlan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--chats", type=int, default=30)
    parser.add_argument("--msgs", type=int, default=8)
    parser.add_argument(
        "--crash-rate", type=float, default=SoakPlan.crash_rate, help="of a job's first runs"
    )
    parser.add_argument("--log-dir", type=Path, default=None)
    parser.add_argument("--max-failures", type=int, default=20, help="details shown per seed")
    args = parser.parse_args(argv)
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="nanobot-soak-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    # The in-process webhook's logs and metrics go to stdout: into a file, not among the figures.
    functions_log = (log_dir / "functions.log").open("a", encoding="utf-8")
    print(f"seed {Figures.HEADER}", flush=True)
    failed = []
    for seed in args.seeds:
        with contextlib.redirect_stdout(functions_log):
            run = run_soak(SoakPlan(seed, args.chats, args.msgs, args.crash_rate), log_dir=log_dir)
        print(f"{seed} {run.figures.line()}", flush=True)
        if not run.figures.passed:
            failed.append(seed)
            for failure in run.verdict.failures[: args.max_failures]:
                print(f"  {failure}", flush=True)
            more = len(run.verdict.failures) - args.max_failures
            if more > 0:
                print(f"  ... and {more} more", flush=True)
        cold = sorted(run.cold_starts)
        p95 = cold[min(len(cold) - 1, round(0.95 * (len(cold) - 1)))]
        struck = Counter(
            f"{fault.what} {fault.kind}" if fault.what.startswith("crash") else fault.what
            for fault in run.injected
        )
        print(
            f"  faults: {', '.join(f'{what} {n}' for what, n in sorted(struck.items())) or 'none'}"
            f"; model requests {run.model_requests} ({run.model_failures} failed on purpose)",
            flush=True,
        )
        print(
            f"  worker cold starts: {len(cold)}, median {statistics.median(cold) * 1000:.0f} ms,"
            f" p95 {p95 * 1000:.0f} ms (fork server start {run.server_start:.1f} s);"
            f" worker log {run.worker_log}",
            flush=True,
        )
    print("soak: " + ("FAILED seeds " + " ".join(map(str, failed)) if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
