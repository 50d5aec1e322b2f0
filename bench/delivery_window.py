"""The at-most-twice window of exactly-once delivery, measured (README "Delivery guarantees").

A message Telegram accepted can be sent again only if the function dies after Telegram's answer
reached it and before the record of that message was written: for a progress text, the
turn journal's conditional UpdateItem (`record_send`); for a final answer, the transaction that
saves the turn. This times exactly those spans, on moto server over HTTP with the local Bot API
(messages sent through the real outbox and Telegram client), and prints median and p95.

On AWS the same requests are DynamoDB single-item writes in the function's region (typically a
few milliseconds); moto on this machine is the upper figure that CI can reproduce.

    make bench            or            .venv/bin/python bench/delivery_window.py [sends]
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from pathlib import Path

from _moto import start_moto
from pydantic import SecretStr

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.journal import DynamoTurnJournal
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.core.journal import Shown, TurnProgress
from nanobot_lambda.functions.agent_turn.outbox import JournaledOutbox
from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.local.cfn import TemplateContext, load_template
from nanobot_lambda.operator.local.resources import create_resources

TEMPLATE = Path(__file__).resolve().parent.parent / "infra" / "template.yaml"
TOKEN = "123:bench"  # noqa: S105 - the local Bot API's token
CHAT = 111111111


class TimedJournal(DynamoTurnJournal):
    """The journal, timing each record of a sent message."""

    def __init__(self, table: str) -> None:
        super().__init__(table, dynamodb_client())
        self.spans: list[float] = []

    def record_send(
        self, session_key: str, progress: TurnProgress, number: int, shown: Shown
    ) -> None:
        started = time.perf_counter()
        super().record_send(session_key, progress, number, shown)
        self.spans.append(time.perf_counter() - started)


def milliseconds(spans: list[float]) -> str:
    ordered = sorted(spans)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return f"median {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def main(sends: int) -> None:
    server = start_moto()
    api = LocalBotApi(TOKEN).start()
    try:
        context = TemplateContext(
            load_template(TEMPLATE), parameters={"AllowFrom": str(CHAT), "LlmModel": "openai/x"}
        )
        create_resources(context, f"bench-{uuid.uuid4().hex[:8]}")
        table = context.refs["SessionsTable"]
        journal = TimedJournal(table)
        sessions = DynamoSessionStore(table, dynamodb_client())
        bot = TelegramBot(SecretStr(TOKEN), api.base_url)
        saves: list[float] = []
        for turn in range(sends):
            key = f"telegram:{CHAT}"
            progress = TurnProgress(f"update-{turn}")
            outbox = JournaledOutbox(bot, journal, key, progress)
            outbox.send(CHAT, f"Let me check {turn}…")  # a progress text: recorded at once
            history = sessions.load(key, 20)
            outbox.send(CHAT, f"The answer {turn}.", record=False)  # the final answer
            started = time.perf_counter()
            saved = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
            sessions.append(
                history, saved, turn_id=progress.turn_id, also=journal.finish(key, progress)
            )
            saves.append(time.perf_counter() - started)
        print(f"delivery window over {sends} turns (moto server, local Bot API):")
        print(f"  progress text, Telegram's answer -> its record: {milliseconds(journal.spans)}")
        print(f"  final answer, Telegram's answer -> turn saved:  {milliseconds(saves)}")
    finally:
        api.stop()
        server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
