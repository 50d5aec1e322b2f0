"""Latency a user feels: from the webhook POST to the first sign of life, the first answer text
they can read, and the final message. Median and p95 over runs, agent_turn warm and cold.

The whole local stack (infra/template.yaml on moto server, the local Bot API, the handlers),
with a streaming stand-in model: the scripted OpenAI-compatible server answers a 600-token
answer (one word per token) after a time to first token of 0.5 s, at 50 tokens/s, streamed when
asked to stream and otherwise in one response after the same generation time. Timestamps are
taken where Telegram would see the calls: in the local Bot API.

- warm: one stack, a turn to warm it, then `--runs` turns; SQS is long-polled as Lambda's event
  source mapping does.
- cold: each run in a fresh process whose handlers are imported on first use, so the webhook's
  and agent_turn's imports (litellm: about 3 s) fall inside the measurement as on a Lambda cold
  start without SnapStart. Modules the local stack itself imports are warm there; that makes
  the webhook's cold start here shorter than on Lambda (about 0.35 s more there).
- cold, keep-warm on (`KeepWarmMinutes`): the same fresh process, but agent_turn has answered
  the keep-warm ping (its init ran then) and idled `--idle` seconds before the first message:
  the first message after a quiet hour with the schedule running. Its first turn is still the
  container's first (no warm caches, connections or model client yet).

    .venv/bin/python bench/latency.py [--runs 5] [--cold-runs 3] [--modes stream,typing]
    # the code before live replies, for comparison (a worktree of that commit):
    PYTHONPATH=/tmp/before/layers .venv/bin/python bench/latency.py \
        --tree /tmp/before --modes before

Goals (issue 14): first sign ≤ 1 s even cold; first answer text ≤ time to first token + 1 s
warm; final message ≤ generation time + 1 s. Issue 31: cold first text ≤ time to first token +
2.5 s without keep-warm or SnapStart; with keep-warm on, the warm goal.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support: the scripted model server

from _moto import compile_bytecode, start_moto  # noqa: E402

from nanobot_lambda.operator.local import stack as local_stack  # noqa: E402
from tests.support.scripted_model import ScriptedModelServer, Step  # noqa: E402

SIGNS = ("sendChatAction", "setMessageReaction")
RESULT = "result: "  # the line of a cold run's output that holds its figures
KEPT_WARM = "cold, keep-warm on"
MODES = {  # mode -> template parameters
    "stream": {},  # STREAM_REPLIES on (the default)
    "typing": {"StreamReplies": "false"},
    "before": {},  # the code before live replies (run with --tree and PYTHONPATH)
}


def answer(tokens: int) -> str:
    vocabulary = ("the", "plan", "for", "today", "starts", "with", "coffee", "then", "a", "walk")
    return " ".join(vocabulary[n % len(vocabulary)] for n in range(tokens))


class PacedModel(ScriptedModelServer):
    """The scripted server; a request that does not stream waits for the whole generation."""

    def _take(self, request: dict[str, Any], headers: dict[str, str]) -> Step | None:
        step = super()._take(request, headers)
        if step is not None and not request.get("stream") and step.tokens_per_second:
            words = len((step.content or "").split())
            time.sleep(step.first_token_delay + words / step.tokens_per_second)
        return step


class LazyHandler:
    """A function's module imported at its first invocation, as on a Lambda cold start."""

    def __init__(self, load: Any, code_dir: Path, name: str) -> None:
        self._load = lambda: load(code_dir, name)
        self._module: Any = None

    def _import(self) -> Any:
        # Powertools' Logger takes the formatter of the service logger's first handler: the
        # stack's log sink (attached at start) must not be that one.
        service = logging.getLogger(os.environ.get("POWERTOOLS_SERVICE_NAME", "nanobot"))
        sinks = [sink for sink in service.handlers if isinstance(sink, local_stack.LogSink)]
        for sink in sinks:
            service.removeHandler(sink)
        try:
            return self._load()
        finally:
            for sink in sinks:
                service.addHandler(sink)

    def handler(self, event: Any, context: Any) -> Any:
        if self._module is None:
            self._module = self._import()
        return self._module.handler(event, context)


class Timeline:
    """When each Bot API call reached the local Bot API (recorded around its `handle`)."""

    def __init__(self, bot_api: Any) -> None:
        self.calls: list[tuple[float, str, dict[str, Any]]] = []
        handle = bot_api.handle

        def timed(method: str, params: dict[str, Any]) -> Any:
            self.calls.append((time.monotonic(), method, dict(params)))
            return handle(method, params)

        bot_api.handle = timed

    def measure(self, since: float, chat_id: int) -> dict[str, float] | None:
        """Seconds from `since` to the sign of life, the first text, the final message."""
        mine = [
            (at - since, method)
            for at, method, params in list(self.calls)
            if at >= since and str(params.get("chat_id")) == str(chat_id)
        ]
        final = [at for at, method in mine if method == "sendMessage"]
        if not final:
            return None
        signs = [at for at, method in mine if method in SIGNS]
        texts = [at for at, method in mine if method in ("sendMessageDraft", "sendMessage")]
        return {"sign": min(signs, default=final[0]), "text": texts[0], "final": final[-1]}


def start_stack(tree: Path, mode: str, model: PacedModel) -> Any:
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # no EMF records among the figures
    stack = local_stack.LocalStack(
        tree / "infra" / "template.yaml",
        model_env=model.env(),
        parameters={**MODES[mode], "LogLevel": "WARNING"},
    )
    return stack.start()


def one_turn(stack: Any, timeline: Timeline, model: PacedModel, args: argparse.Namespace) -> Any:
    model.steps.append(
        Step(
            content=answer(args.tokens),
            first_token_delay=args.ttft,
            tokens_per_second=args.tps,
        )
    )
    done = threading.Event()

    def poll() -> None:  # Lambda's event source mapping: long polls, invokes at once
        while not done.is_set():
            stack.poller.poll_once(wait_seconds=1)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    started = time.monotonic()
    stack.post_update(stack.text_update("plan my day"))
    deadline = started + args.ttft + args.tokens / args.tps + 60
    measured = None
    while measured is None and time.monotonic() < deadline:
        time.sleep(0.02)
        measured = timeline.measure(started, stack.user.id)
    done.set()
    poller.join(timeout=5)
    if measured is None:
        raise RuntimeError("no answer within the time limit")
    stack.poller.drain()  # the turn's saving, before the next run
    return measured


def run_child(args: argparse.Namespace) -> None:
    """One cold run: a fresh process, handlers imported on first use."""
    real_load = local_stack.load_handler_module
    local_stack.load_handler_module = lambda code_dir, name: LazyHandler(  # type: ignore[assignment]
        real_load, code_dir, name
    )
    moto = start_moto()
    model = PacedModel().start()
    stack = start_stack(Path(args.tree), args.child, model)
    timeline = Timeline(stack.bot_api)
    try:
        if args.keep_warm:  # the ping started the container (its init), then a quiet time
            from nanobot_lambda.functions.keep_warm import KEEP_WARM_EVENT  # not in older trees

            agent_turn = stack.handlers["agent_turn"]
            agent_turn.handler(dict(KEEP_WARM_EVENT), stack._context("agent_turn"))
            time.sleep(args.idle)
        print(RESULT + json.dumps(one_turn(stack, timeline, model, args)), flush=True)
    finally:
        stack.stop()
        model.stop()
        moto.stop()


def cold_runs(
    args: argparse.Namespace, mode: str, keep_warm: bool = False
) -> list[dict[str, float]]:
    results = []
    for _ in range(args.cold_runs):
        command = [sys.executable, __file__, "--child", mode, *child_arguments(args)]
        if keep_warm:
            command += ["--keep-warm", "--idle", str(args.idle)]
        output = subprocess.run(  # noqa: S603 - this script, with its own arguments
            command, check=True, capture_output=True, text=True, env=os.environ.copy()
        ).stdout
        (line,) = [line for line in output.splitlines() if line.startswith(RESULT)]
        results.append(json.loads(line.removeprefix(RESULT)))
    return results


def child_arguments(args: argparse.Namespace) -> list[str]:
    return [
        "--tree",
        str(args.tree),
        "--ttft",
        str(args.ttft),
        "--tps",
        str(args.tps),
        "--tokens",
        str(args.tokens),
    ]


def warm_runs(args: argparse.Namespace, mode: str) -> list[dict[str, float]]:
    moto = start_moto()
    model = PacedModel().start()
    stack = start_stack(Path(args.tree), mode, model)
    timeline = Timeline(stack.bot_api)
    try:
        one_turn(stack, timeline, model, args)  # warms the container
        return [one_turn(stack, timeline, model, args) for _ in range(args.runs)]
    finally:
        stack.stop()
        model.stop()
        moto.stop()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(mode: str, temperature: str, results: list[dict[str, float]], goals: Any) -> None:
    for metric, label in (("sign", "first sign"), ("text", "first text"), ("final", "final")):
        values = [result[metric] for result in results]
        goal = goals.get((metric, temperature))
        verdict = (
            ""
            if goal is None
            else f"goal ≤ {goal:.1f} s: " + ("met" if p95(values) <= goal else "NOT met")
        )
        print(
            f"{mode:<7} {temperature:<18} {label:<11} median {statistics.median(values):6.2f} s"
            f"   p95 {p95(values):6.2f} s   (n={len(values)})  {verdict}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="warm runs per mode")
    parser.add_argument("--cold-runs", type=int, default=3, help="cold runs per mode")
    parser.add_argument("--modes", default="stream,typing", help="stream, typing, before")
    parser.add_argument("--tree", default=str(ROOT), help="the checkout whose code runs")
    parser.add_argument("--ttft", type=float, default=0.5, help="time to first token, s")
    parser.add_argument("--tps", type=float, default=50.0, help="tokens per second")
    parser.add_argument("--tokens", type=int, default=600, help="tokens in the answer")
    parser.add_argument("--keep-warm-runs", type=int, default=3, help="cold, keep-warm on runs")
    parser.add_argument("--idle", type=float, default=2.0, help="s between the ping and a turn")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--keep-warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args)
        return
    compile_bytecode(Path(args.tree))  # cold starts read it, as on Lambda
    generation = args.ttft + args.tokens / args.tps
    goals = {
        ("sign", "warm"): 1.0,
        ("sign", "cold"): 1.0,
        ("text", "warm"): args.ttft + 1.0,
        ("final", "warm"): generation + 1.0,
        ("text", "cold"): args.ttft + 2.5,  # without keep-warm or SnapStart (issue 31)
        ("sign", KEPT_WARM): 1.0,
        ("text", KEPT_WARM): args.ttft + 1.0,  # the warm goal
    }
    print(
        f"A {args.tokens}-token answer, first token after {args.ttft} s, {args.tps:g} tokens/s "
        f"(generation {generation:.1f} s); code: {args.tree}",
        flush=True,
    )
    for mode in args.modes.split(","):
        report(mode, "warm", warm_runs(args, mode), goals)
        if args.cold_runs:
            report(mode, "cold", cold_runs(args, mode), goals)
        if args.keep_warm_runs and mode != "before":  # the code before knows no ping
            kept = cold_runs(
                argparse.Namespace(**{**vars(args), "cold_runs": args.keep_warm_runs}), mode, True
            )
            report(mode, KEPT_WARM, kept, goals)


if __name__ == "__main__":
    main()
