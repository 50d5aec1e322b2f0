"""Context economy of a conversation: input tokens per turn, and how much of each request a
provider's prompt cache can serve (the part that is a byte-identical prefix of the previous
request). Run for this code and for the code before issue 18, side by side.

A scripted 20-turn conversation runs through the local stack (infra/template.yaml on moto
server, the local Bot API, the deployed handlers), with the agent's model swapped for an
in-process stand-in that answers by script: plain answers of varied length, and on six turns
tool calls (read_file of a 3,000-character note, list_dir, write_file, grep) before the answer.
Asked for `save_memory`, it summarises. Each request the stand-in receives is recorded.

Figures, with litellm's gpt-4o tokenizer (`LLM_MODEL=openai/gpt-4o` for the context window):
- input tokens per turn: litellm's count of each request of the turn (messages and tools);
- prefix share of a request: the tokens of the longest byte-identical prefix it shares with the
  previous request of the conversation (consolidation's own requests aside), over its tokens,
  both taken on a rendering of the request as a chat template lays it out (tools, then each
  message's role, content, tool calls and tool call id);
- outside: the tokens past that prefix, which no prompt cache can serve.
Requests right after a consolidation (it rewrites memory, so the system prompt) are counted
apart; the goals (issue 18): prefix share ≥ 0.97 on the others, and tokens outside the prefix
over the 20 turns ≤ 0.6 × the code before.

    make bench        or        .venv/bin/python bench/conversation.py [--baseline REV]

The code before runs from a git worktree of REV (default 4d54a5f, the last commit before issue
18), made in a temporary directory and removed afterwards.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from nanobot_lambda.core.model import CompletionRequest

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "4d54a5f"
RESULT = "result: "
MODEL = "gpt-4o"

NOTE = "".join(
    f"- {day}: reviewed the garden plan, watered the tomatoes, noted the weather ({n}).\n"
    for n, day in enumerate(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] * 5)
)
SENTENCE = (
    "sure here is what I found about your plan and the garden the tomatoes need water every "
    "morning while the basil prefers shade in the afternoon and the weather looks mild this week"
)
WORDS = SENTENCE.split(" ")
# Turn number -> the tool calls the model makes before it answers.
TOOL_TURNS: dict[int, list[tuple[str, dict[str, Any]]]] = {
    3: [("read_file", {"path": "notes/garden.md"})],
    6: [("list_dir", {"path": "notes"})],
    9: [("write_file", {"path": "notes/todo.md", "content": "- buy seeds\n- fix the hose\n"})],
    12: [("grep", {"pattern": "tomatoes", "path": "notes"})],
    15: [("read_file", {"path": "notes/garden.md"}), ("read_file", {"path": "notes/todo.md"})],
    18: [("read_file", {"path": "notes/todo.md"})],
}
TURNS = 20


def answer(turn: int) -> str:
    """A plain answer of 40 to 110 words, different on every turn."""
    count = 40 + (turn * 37) % 71
    return " ".join(WORDS[(turn + i * 7) % len(WORDS)] for i in range(count)).capitalize() + "."


# -- the child: one conversation on one tree's code --------------------------------------------


def run_conversation(tree: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "bench"))
    from _moto import start_moto

    from nanobot_lambda.core.model import ModelReply, ToolCall, Usage
    from nanobot_lambda.operator.local.stack import LocalStack

    class ScriptedAgentModel:
        """The stand-in: records every request, answers by the turn's script."""

        def __init__(self) -> None:
            self.requests: list[dict[str, Any]] = []
            self.turn = 0
            self.step = 0

        def complete(self, request: CompletionRequest) -> ModelReply:
            messages, tools, tool_choice = request.messages, request.tools, request.tool_choice
            forced = isinstance(tool_choice, dict) and tool_choice["function"]["name"]
            kind = "consolidation" if forced == "save_memory" else "agent"
            self.requests.append(
                {
                    "turn": self.turn,
                    "kind": kind,
                    "messages": copy.deepcopy(messages),
                    "tools": tools,
                }
            )
            usage = Usage(prompt_tokens=1000, completion_tokens=50)
            if kind == "consolidation":
                summary = {
                    "history_entry": f"[2030-01-01 10:{self.turn:02d}] Talked about the garden.",
                    "memory_update": "The user keeps a garden: tomatoes and basil.",
                }
                call = ToolCall(f"s{len(self.requests)}", "save_memory", json.dumps(summary))
                return ModelReply(content=None, tool_calls=(call,), usage=usage)
            calls = TOOL_TURNS.get(self.turn, [])
            self.step += 1
            if self.step == 1 and calls:
                tool_calls = tuple(
                    ToolCall(f"call_{self.turn}_{n}", name, json.dumps(arguments))
                    for n, (name, arguments) in enumerate(calls)
                )
                return ModelReply(content="Let me look.", tool_calls=tool_calls, usage=usage)
            return ModelReply(content=answer(self.turn), usage=usage)

    null = open(os.devnull, "w")  # noqa: SIM115 - the functions log JSON lines to stdout
    real_stdout = sys.stdout
    sys.stdout = null
    moto = start_moto()
    model = ScriptedAgentModel()
    stack = LocalStack(tree / "infra" / "template.yaml", model_env={"LLM_MODEL": f"openai/{MODEL}"})
    stack.start()
    try:
        handler = stack.handlers["agent_turn"]
        handler.LitellmChatModel = lambda settings: model
        handler.records = handler.build_records()
        stack.workspace.write("notes/garden.md", NOTE.encode())
        for turn in range(1, TURNS + 1):
            model.turn, model.step = turn, 0
            update = stack.text_update(f"Turn {turn}: tell me more about the garden, please.")
            update["update_id"] = 900000000 + turn
            assert stack.post_update(update)["statusCode"] == 200
            stack.process_queue()
        sent = len(stack.bot_api.messages)
    finally:
        stack.stop()
        moto.stop()
        sys.stdout = real_stdout
        null.close()
    return {"requests": model.requests, "messages_sent": sent}


# -- the figures ------------------------------------------------------------------------------


def rendered(request: dict[str, Any]) -> str:
    """The request as a chat template lays it out (what a provider's prefix cache compares)."""
    parts = [json.dumps(request["tools"], sort_keys=True, ensure_ascii=False)]
    for message in request["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                part.get("text", "[image]") for part in content if isinstance(part, dict)
            )
        calls = [
            (call["id"], call["function"]["name"], call["function"]["arguments"])
            for call in message.get("tool_calls") or []
        ]
        parts.append(
            f"<|{message['role']}|>{content or ''}"
            f"{json.dumps(calls, ensure_ascii=False) if calls else ''}"
            f"{message.get('tool_call_id') or ''}<|end|>"
        )
    return "".join(parts)


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    low, high = 0, n
    while low < high:  # binary search on the prefix length (strings compare in C)
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def figures(requests: list[dict[str, Any]]) -> dict[str, Any]:
    import litellm

    def encoded(text: str) -> int:
        return len(litellm.encode(model=MODEL, text=text))

    rows, previous, consolidated = [], None, False
    for request in requests:
        if request["kind"] == "consolidation":
            consolidated = True
            continue
        text = rendered(request)
        total = encoded(text)
        prefix = encoded(text[: common_prefix(previous, text)]) if previous else 0
        rows.append(
            {
                "turn": request["turn"],
                "input": int(
                    litellm.token_counter(
                        model=MODEL, messages=request["messages"], tools=request["tools"]
                    )
                ),
                "share": prefix / total,
                "outside": total - prefix,
                "after_consolidation": consolidated,
                "first": previous is None,
            }
        )
        previous, consolidated = text, False
    return {
        "rows": rows,
        "consolidations": sum(request["kind"] == "consolidation" for request in requests),
    }


def summary(result: dict[str, Any]) -> dict[str, Any]:
    rows = result["rows"]
    steady = [row for row in rows if not row["after_consolidation"] and not row["first"]]
    outside = sum(row["outside"] for row in rows)
    served = sum(row["input"] for row in rows) - outside  # what a cache serves
    return {
        "input": sum(row["input"] for row in rows),
        "outside": outside,
        "outside_after_first": outside - rows[0]["outside"],
        # Input priced in units of an uncached token: OpenAI bills cached tokens at half,
        # Anthropic at a tenth, and cache writes at 1.25.
        "openai_units": round(outside + 0.5 * served),
        "anthropic_units": round(1.25 * outside + 0.1 * served),
        "share_median": statistics.median(row["share"] for row in steady),
        "share_min": min(row["share"] for row in steady),
        "share_mean": statistics.fmean(row["share"] for row in steady),
        "after_consolidation": sum(row["after_consolidation"] for row in rows),
        "consolidations": result["consolidations"],
        "requests": len(rows),
    }


def child(tree: Path) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # The encodings load now, from those litellm bundles: the stack resets TIKTOKEN_CACHE_DIR.
    litellm.encode(model=MODEL, text="warm")
    conversation = run_conversation(tree)
    result = figures(conversation["requests"])
    result["messages_sent"] = conversation["messages_sent"]
    print(RESULT + json.dumps(result))


# -- the parent: both codes, side by side -----------------------------------------------------


def run_child(tree: Path) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": f"{tree / 'layers'}{os.pathsep}{ROOT}"}
    output = subprocess.run(  # noqa: S603 - this script, with its own arguments
        [sys.executable, __file__, "--child", str(tree)],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    ).stdout
    (line,) = [line for line in output.splitlines() if line.startswith(RESULT)]
    return dict(json.loads(line.removeprefix(RESULT)))


def baseline_tree(revision: str, directory: str) -> Path:
    tree = Path(directory) / "before"
    subprocess.run(  # noqa: S603
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],  # noqa: S607
        check=True,
        capture_output=True,
    )
    return tree


def per_turn(label: str, result: dict[str, Any]) -> None:
    print(
        f"  {label}: input tokens per turn (and per request, the share that is the previous"
        " request's prefix; *: right after a consolidation)"
    )
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for row in result["rows"]:
        by_turn.setdefault(row["turn"], []).append(row)
    for turn, rows in by_turn.items():
        shares = " ".join(
            f"{row['share']:.3f}{'*' if row['after_consolidation'] else ''}" for row in rows
        )
        print(
            f"    turn {turn:>2}: {sum(r['input'] for r in rows):>6,} in, "
            f"{sum(r['outside'] for r in rows):>5,} outside  [{shares}]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=BASELINE, help="the revision to compare with")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--per-turn", action="store_true", help="print every turn")
    args = parser.parse_args()
    if args.child:
        child(Path(args.child))
        return
    with tempfile.TemporaryDirectory() as directory:
        before_tree = baseline_tree(args.baseline, directory)
        try:
            before_result = run_child(before_tree)
        finally:
            subprocess.run(  # noqa: S603
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_tree)],  # noqa: S607
                check=False,
                capture_output=True,
            )
    now_result = run_child(ROOT)
    print(
        f"Context economy: a {TURNS}-turn conversation, {len(TOOL_TURNS)} turns with tool calls "
        f"(local stack, in-process stand-in model, gpt-4o tokenizer)"
    )
    print(
        f"  {'code':<20} {'requests':>8} {'input tokens':>13} {'outside prefix':>15}"
        f" {'prefix share med / mean / min':>31} {'consol.':>8}"
        f" {'as billed: OpenAI':>18} {'Anthropic':>10}"
    )
    totals = {}
    for label, result in ((f"before ({args.baseline})", before_result), ("now", now_result)):
        figures_ = summary(result)
        totals[label] = figures_
        print(
            f"  {label:<20} {figures_['requests']:>8} {figures_['input']:>13,}"
            f" {figures_['outside']:>15,}"
            f"   {figures_['share_median']:.3f} / {figures_['share_mean']:.3f} / "
            f"{figures_['share_min']:.3f}   {figures_['consolidations']:>8}"
            f" {figures_['openai_units']:>18,} {figures_['anthropic_units']:>10,}"
        )
    before = totals[f"before ({args.baseline})"]
    now = totals["now"]
    print(
        f"  tokens outside the prefix, now / before: {now['outside'] / before['outside']:.3f}"
        f" ({now['outside_after_first'] / before['outside_after_first']:.3f} without the first"
        " request, which no cache serves in either; goal ≤ 0.60)"
    )
    print(
        "  prefix share: over the requests neither first nor right after a consolidation"
        " (goal ≥ 0.97); as billed: input in uncached-token units, cached tokens at 0.5"
        " (OpenAI) or 0.1 with cache writes at 1.25 (Anthropic)"
    )
    if args.per_turn:
        per_turn("before", before_result)
        per_turn("now", now_result)


if __name__ == "__main__":
    main()
