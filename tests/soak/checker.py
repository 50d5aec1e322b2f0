"""The soak's checker: for every message, what the user saw and what the session holds.

Its inputs are what a user and an operator could see: the messages the local Bot API accepted
(in order, with their ids), the sessions in DynamoDB, the queue and the dead-letter queue; and
from the proxy, which job each message was sent for (for texts that carry no tag, such as the
apology) and which sends Telegram performed without the client hearing its answer.

Per message (tag `c3k5`):
- **answered once**: exactly one final answer: the model's answer (`c3k5 answer vN`), or an
  apology for a model error (README: "one apology and nothing saved"), or the dead-letter
  notice. None is `lost`. More than one is `dup`, unless the extra copies are inside the
  documented window (a send Telegram performed whose answer the client never got: the worker
  killed before it heard, or the connection dropped): then `window`. A progress text or a
  message-tool note shown twice counts the same way (a re-run that words a step differently
  shows both, as README's Delivery guarantees say: not a repeat).
- **in order**: the first final answers of a chat's messages come in the order they were sent
  (`out_of_order` counts the messages answered before the one sent before them).
- **the session**: each answered exchange saved once, in order, nothing saved for a message
  that got an apology or nothing; every text the exchange saved from the assistant (its
  progress, its message-tool notes, its final answer) is a text the user was shown, and its
  final answer is the one the user saw (`session` counts the messages saved wrong).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.bot_api import SentMessage
from tests.soak.plan import SoakPlan, tag_of

_TAGGED = re.compile(r"^(c\d+k\d+) (answer|step|note) (?:p(\d+) )?v(\d+)")
_TAG = re.compile(r"\bm c(\d+) k(\d+)\b")
APOLOGY = texts.load("model_error").strip()
DEAD_LETTER_NOTICE = texts.load("could_not_process").strip()
# After an answer whose save failed on every attempt (dispatch.py, give_up): not a final.
NOT_SAVED_NOTICE = texts.load("answer_not_saved").strip()
FINAL_KINDS = frozenset({"answer", "apology", "dead-letter"})


@dataclass(frozen=True)
class Seen:
    """One message the user got, as the checker reads it."""

    message_id: int
    text: str
    tag: str | None  # the turn it belongs to
    kind: str  # answer, step, note, apology, dead-letter, not-saved, other
    step: int | None  # the position of a step or note
    windowed: bool  # Telegram performed it but the client never heard

    def line(self) -> str:
        mark = " [window]" if self.windowed else ""
        return f"#{self.message_id} {self.text[:60]!r}{mark}"


@dataclass
class Figures:
    chats: int = 0
    msgs: int = 0
    dup: int = 0
    lost: int = 0
    out_of_order: int = 0
    dlq: int = 0
    window: int = 0
    crashes: int = 0
    elapsed: float = 0.0
    session: int = 0
    stuck: int = 0

    HEADER = "chats msgs dup lost out_of_order dlq window crashes elapsed session stuck"

    def line(self) -> str:
        return (
            f"{self.chats} {self.msgs} {self.dup} {self.lost} {self.out_of_order} {self.dlq} "
            f"{self.window} {self.crashes} {self.elapsed:.1f}s {self.session} {self.stuck}"
        )

    @property
    def passed(self) -> bool:
        return not (
            self.dup or self.lost or self.out_of_order or self.dlq or self.session or self.stuck
        )


@dataclass
class Verdict:
    figures: Figures
    failures: list[str] = field(default_factory=list)


def read_seen(
    messages: Iterable[SentMessage],
    sent_for: Mapping[tuple[int, int], str],
    windows: set[tuple[int, int]],
) -> dict[int, list[Seen]]:
    """What each chat was shown, in order, attributed to the turns it belongs to."""
    by_chat: dict[int, list[Seen]] = defaultdict(list)
    for message in sorted(messages, key=lambda m: m.message_id):
        key = (message.chat_id, message.message_id)
        text = message.plain_text.strip()
        tagged = _TAGGED.match(text)
        if tagged:
            tag, kind = tagged.group(1), tagged.group(2)
            step = int(tagged.group(3)) if tagged.group(3) is not None else None
        else:
            tag, step = sent_for.get(key), None
            kind = {
                APOLOGY: "apology",
                DEAD_LETTER_NOTICE: "dead-letter",
                NOT_SAVED_NOTICE: "not-saved",
            }.get(text, "other")
        by_chat[message.chat_id].append(
            Seen(message.message_id, text, tag, kind, step, key in windows)
        )
    return by_chat


def _extra_copies(copies: list[Seen]) -> tuple[int, int]:
    """(dup, window): copies beyond the first, and how many of them the window explains."""
    if len(copies) <= 1:
        return 0, 0
    unexplained = max(0, sum(1 for seen in copies if not seen.windowed) - 1)
    return unexplained, len(copies) - 1 - unexplained


def _user_tag(message: Mapping[str, Any]) -> str | None:
    content = message.get("content")
    found = _TAG.search(content if isinstance(content, str) else json.dumps(content))
    return tag_of(int(found.group(1)), int(found.group(2))) if found else None


def _exchanges(session: list[dict[str, Any]]) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """The session as (tag of the user message, the messages the turn added after it)."""
    exchanges: list[tuple[str | None, list[dict[str, Any]]]] = []
    for message in session:
        if message.get("role") == "user":
            exchanges.append((_user_tag(message), []))
        elif exchanges:
            exchanges[-1][1].append(message)
        else:
            exchanges.append((None, [message]))
    return exchanges


def _assistant_texts(added: list[dict[str, Any]]) -> list[str]:
    """Every text of the exchange the user should have been shown: the assistant's contents
    and the message tool's notes."""
    shown: list[str] = []
    for message in added:
        if message.get("role") != "assistant":
            continue
        if isinstance(message.get("content"), str) and message["content"].strip():
            shown.append(message["content"].strip())
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            if function.get("name") == "message":
                try:
                    shown.append(str(json.loads(function.get("arguments") or "{}")["content"]))
                except (ValueError, KeyError):
                    shown.append(f"<unreadable message call {function.get('arguments')!r}>")
    return shown


def check(
    plan: SoakPlan,
    seen_by_chat: Mapping[int, list[Seen]],
    sessions: Mapping[int, list[dict[str, Any]]],
    faults: Mapping[str, list[str]] | None = None,
) -> Verdict:
    """The per-message checks over every chat (the queue's figures are the harness's)."""
    figures = Figures(chats=plan.chats, msgs=plan.chats * plan.messages)
    failures: list[str] = []
    for chat in range(plan.chats):
        chat_id = plan.chat_id(chat)
        seen = seen_by_chat.get(chat_id, [])
        session = sessions.get(chat_id, [])
        exchanges = _exchanges(session)

        def report(
            tag: str,
            problem: str,
            chat: int = chat,
            seen: list[Seen] = seen,
            exchanges: list[tuple[str | None, list[dict[str, Any]]]] = exchanges,
        ) -> None:
            shown = [s.line() for s in seen if s.tag == tag] or ["nothing"]
            saved = [
                f"{m.get('role')}: {(m.get('content') or '')[:60]!r}"
                + (" +tool_calls" if m.get("tool_calls") else "")
                for t, added in exchanges
                if t == tag
                for m in added
            ] or ["nothing"]
            struck = (faults or {}).get(tag) or ["none"]
            failures.append(
                f"seed {plan.seed} chat {chat} message {tag}: {problem}\n"
                f"    seen:   {' | '.join(shown)}\n"
                f"    saved:  {' | '.join(saved)}\n"
                f"    faults: {'; '.join(struck)}"
            )

        first_final: dict[int, int] = {}
        for number in range(1, plan.messages + 1):
            tag = tag_of(chat, number)
            mine = [s for s in seen if s.tag == tag]
            finals = [s for s in mine if s.kind in FINAL_KINDS]
            if not finals:
                figures.lost += 1
                report(tag, "lost: no answer")
            else:
                first_final[number] = finals[0].message_id
            dup, window = _extra_copies(finals)
            # A re-run may word a step differently: both are shown (README, Delivery
            # guarantees). The same text shown twice is a repeat.
            steps: dict[str, list[Seen]] = defaultdict(list)
            for s in mine:
                if s.kind in ("step", "note"):
                    steps[s.text].append(s)
            for copies in steps.values():
                more_dup, more_window = _extra_copies(copies)
                dup, window = dup + more_dup, window + more_window
            if dup:
                figures.dup += 1
                report(tag, f"answered more than once ({dup} extra)")
            if window:
                figures.window += 1
        for number in range(2, plan.messages + 1):
            before, now = first_final.get(number - 1), first_final.get(number)
            if before is not None and now is not None and now < before:
                figures.out_of_order += 1
                report(tag_of(chat, number), "answered before the message sent before it")
        figures.session += _check_session(plan, chat, seen, exchanges, report)
    figures.msgs = plan.chats * plan.messages
    return Verdict(figures, failures)


def _check_session(
    plan: SoakPlan,
    chat: int,
    seen: list[Seen],
    exchanges: list[tuple[str | None, list[dict[str, Any]]]],
    report: Any,
) -> int:
    """How many of the chat's messages its session holds wrong (each reported)."""
    shown = {s.text for s in seen}
    answered = {s.tag: s.text for s in seen if s.kind == "answer" and s.tag is not None}
    wrong: set[str] = set()
    saved_tags = [tag for tag, _ in exchanges]
    order = [tag_of(chat, n) for n in range(1, plan.messages + 1)]
    expected = [tag for tag in order if tag in answered]
    for tag in order:
        count = saved_tags.count(tag)
        if tag in answered and count == 0:
            wrong.add(tag)
            report(tag, "the answer the user saw was not saved")
        elif tag not in answered and count:
            wrong.add(tag)
            report(tag, "saved, but the user saw no answer")
        elif count > 1:
            wrong.add(tag)
            report(tag, f"the exchange is saved {count} times")
    saved_first = list(dict.fromkeys(t for t in saved_tags if t in expected))
    in_order = [t for t in expected if t in saved_tags]
    misplaced = next(
        (want for got, want in zip(saved_first, in_order, strict=True) if got != want), None
    )
    if misplaced is not None and misplaced not in wrong:
        wrong.add(misplaced)
        report(misplaced, "saved after exchanges of messages sent after it")
    for saved_tag, added in exchanges:
        if saved_tag is None:
            wrong.add("untagged")
            report("untagged", "the session holds messages of no soak message")
            continue
        tag = saved_tag
        unseen = [text for text in _assistant_texts(added) if text not in shown]
        if unseen and tag not in wrong:
            wrong.add(tag)
            report(tag, f"the session holds texts the user was never shown: {unseen}")
        finals = [
            m.get("content")
            for m in added
            if m.get("role") == "assistant" and not m.get("tool_calls")
        ]
        final = finals[-1].strip() if finals and isinstance(finals[-1], str) else None
        if tag in answered and final != answered[tag] and tag not in wrong:
            wrong.add(tag)
            report(tag, f"saved answer {final!r} is not the one the user saw")
    return len(wrong)
