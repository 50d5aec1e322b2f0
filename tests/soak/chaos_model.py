"""A chaos model: an OpenAI-compatible server that answers every turn of the soak by the plan.

It is the scripted model server (streamed and not, its pacing and stream faults) with steps
made up per request instead of queued: the request's last user message names the turn
(`m c3 k5`), the assistant messages after it give the iteration (position), and the answer is
drawn from the seed, the turn, the position and how many answers were served there before.
So a re-run of the same turn (after a crash) answers differently: another variant, a tool
call where there was an answer, an answer where there was a tool call. Every text it writes
carries the turn's tag and its variant (`c3k5 step p0 v1`, `c3k5 answer v2: ...`), so the
checker can tell what the user saw came from which turn, and whether it is what was saved.

Model errors, per message (plan.model_errors): "transient" fails the first request (a 500, a
429, a stream cut midway or an error event mid-stream; sometimes the second too), which the
client retries; "lasting" fails the first three (the try and LLM_NUM_RETRIES' two), and the
turn apologises. Some answers stream slowly (a late first token, then 50 chunks a second).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from tests.soak.plan import SoakPlan, rng, tag_of
from tests.support.scripted_model import ScriptedModelServer, Step

_TURN = re.compile(r"\bm c(\d+) k(\d+)\b")
MAX_TOOL_STEPS = 3  # positions past this always answer
LASTING_FAILURES = 3  # the try and LLM_NUM_RETRIES' two: then ModelError


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def turn_of(request: dict[str, Any]) -> tuple[str, int] | None:
    """(tag, position) of a request: the turn its last user message starts, and how many
    iterations of it came before (the assistant messages after that user message)."""
    messages = request.get("messages") or []
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") != "user":
            continue
        found = _TURN.search(_text_of(messages[index].get("content")))
        if found is None:
            return None
        position = sum(1 for m in messages[index + 1 :] if m.get("role") == "assistant")
        return tag_of(int(found.group(1)), int(found.group(2))), position
    return None


def answer_text(tag: str, variant: int) -> str:
    words = " ".join(f"w{n}" for n in range(8))
    return f"{tag} answer v{variant}: {words}"


class ChaosModel(ScriptedModelServer):
    def __init__(self, plan: SoakPlan) -> None:
        super().__init__()
        self.plan = plan
        self.asked: Counter[tuple[str, int]] = Counter()  # requests per (tag, position)
        self.served: Counter[tuple[str, int]] = Counter()  # answers per (tag, position)
        self.failed = 0  # requests answered with an error or a broken stream
        self.untagged = 0  # requests of no soak turn (answered with a plain reply)

    def _take(self, request: dict[str, Any], headers: dict[str, str]) -> Step | None:
        with self._lock:
            found = turn_of(request)
            if found is None:
                self.untagged += 1
                return Step(content="Nothing to add.")
            ordinal = self.asked[found]
            self.asked[found] += 1
            step = self._failure(*found, ordinal) or self._answer(*found)
            if step.status != 200 or step.break_after or step.error_after:
                self.failed += 1
        return step

    def _failure(self, tag: str, position: int, ordinal: int) -> Step | None:
        """The model error this request gets, if any (on the turn's first model call only)."""
        errors = self.plan.model_errors(tag)
        if position != 0 or errors == "none":
            return None
        r = rng(self.plan.seed, "model-failure", tag, ordinal)
        if errors == "lasting":
            return Step(status=r.choice([500, 429, 503])) if ordinal < LASTING_FAILURES else None
        if ordinal > 1 or (ordinal == 1 and r.random() < 0.7):
            return None
        kind = r.choice(["500", "429", "break", "error"])
        if kind == "break":
            return Step(content=answer_text(tag, 99), break_after=2)
        if kind == "error":
            return Step(content=answer_text(tag, 99), error_after=2)
        return Step(status=int(kind))

    def _answer(self, tag: str, position: int) -> Step:
        variant = self.served[(tag, position)]
        self.served[(tag, position)] += 1
        r = rng(self.plan.seed, "answer", tag, position, variant)
        pace: dict[str, Any] = {}
        if r.random() < 0.25:  # a slow stream: a late first token, then 50 chunks a second
            pace = {"first_token_delay": 0.2, "tokens_per_second": 50.0}
        if position < MAX_TOOL_STEPS and r.random() < 0.45:
            tool = r.choice(["write_file", "message", "read_file"])
            arguments: dict[str, Any] = {
                "write_file": {"path": f"soak/{tag}.md", "content": f"{tag} file p{position}"},
                "message": {"content": f"{tag} note p{position} v{variant}"},
                "read_file": {"path": f"soak/{tag}.md"},
            }[tool]
            progress = f"{tag} step p{position} v{variant}" if r.random() < 0.7 else None
            call = {
                "id": f"call_{tag}_{position}_{variant}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(arguments)},
            }
            return Step(content=progress, tool_calls=[call], **pace)
        return Step(content=answer_text(tag, variant), **pace)
