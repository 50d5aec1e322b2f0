"""`poll`: the local stack fed by "real" Telegram (the Bot API stand-in over HTTP, reached
through TELEGRAM_API_BASE as api.telegram.org would be), in-process and as the console script."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.local.poll import Delivery, TelegramPoller
from nanobot_lambda.operator.local.stack import LocalStack, LocalTelegram
from tests.conftest import ROOT, TEMPLATE, telegram_update
from tests.e2e.test_cli import DEPLOYED_STACK_ENV
from tests.support.cli import CLI, clean_environ, run_cli
from tests.support.processes import sigint_default
from tests.support.scripted_model import ScriptedModelServer

TOKEN = "7171:real-bot-token"
OWNER = 111111111  # Ada, the sender of the shared fixtures


@pytest.fixture
def telegram() -> Iterator[LocalBotApi]:
    api = LocalBotApi(TOKEN).start()
    yield api
    api.stop()


def wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_updates_from_telegram_take_the_deployed_path_and_replies_go_back(
    telegram: LocalBotApi, moto_endpoint: str, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Hello Ada, from your laptop.")
    stack = LocalStack(
        TEMPLATE,
        model_env=model_server.env(),
        endpoint_url=moto_endpoint,
        telegram=LocalTelegram(allow_from=str(OWNER), bot_token=TOKEN, api_base=telegram.base_url),
    ).start()
    deliveries: list[Delivery] = []
    loop = TelegramPoller(
        TelegramBot(SecretStr(TOKEN), telegram.base_url),
        stack.post_update,
        long_poll_seconds=1,
        on_delivery=deliveries.append,
    )
    stop = threading.Event()
    runner = threading.Thread(target=loop.run, args=(stop,))
    try:
        stack.start_background(interval=0.1)
        runner.start()
        stranger = telegram_update("text_private")
        stranger["update_id"] = 900
        stranger["message"]["from"] = {**stranger["message"]["from"], "id": 5, "username": "eve"}
        stranger["message"]["chat"] = {"id": 5, "type": "private", "first_name": "Eve"}
        telegram.push_update(stranger)
        telegram.push_update({**telegram_update("text_private"), "update_id": 901})
        wait_for(lambda: bool(telegram.messages))
    finally:
        stop.set()
        runner.join(timeout=10)
        stack.stop()
    (reply,) = telegram.messages  # to Ada only: the stranger was refused by the allow-list
    assert reply.chat_id == OWNER
    assert reply.plain_text == "Hello Ada, from your laptop."
    assert [d.outcome for d in deliveries] == ["refused", "queued"]
    assert telegram.pending == []  # both acknowledged
    assert model_server.unexpected == []
    # The poller made the call in the webhook's answer, as Telegram would: "typing…" for Ada
    # (none for the stranger) before anything agent_turn sent.
    sent = [(method, params.get("chat_id")) for _, method, params in telegram.timeline]
    sent = [call for call in sent if call[0] != "getUpdates"]
    assert sent[0] == ("sendChatAction", OWNER)
    assert all(chat_id == OWNER for _, chat_id in sent)


def poll_env(telegram: LocalBotApi, model_server: ScriptedModelServer) -> dict[str, str]:
    return {
        **model_server.env(),
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_API_BASE": telegram.base_url,
        "ALLOW_FROM": str(OWNER),
    }


# `poll` reads the bot token, the Bot API base and ALLOW_FROM; the rest of a deployed stack's
# settings (its webhook secret, resources, AWS profile) never reach the local stack.
DEPLOYED_ONLY = {
    name: value
    for name, value in DEPLOYED_STACK_ENV.items()
    if name not in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_API_BASE", "ALLOW_FROM")
}


def test_poll_answers_and_stops_cleanly_on_ctrl_c(
    telegram: LocalBotApi, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Polled and answered.")

    def person() -> None:  # writes to the bot once it polls, then Ctrl-C once answered
        wait_for(lambda: any(m == "getUpdates" for m, _ in telegram.calls), seconds=120)
        telegram.push_update(telegram_update("text_private"))
        wait_for(lambda: bool(telegram.messages))

    completed = run_cli(
        "poll",
        "--env-file",
        "/nonexistent",
        "--long-poll",
        "1",
        env=poll_env(telegram, model_server),
        ctrl_c_after=person,
    )
    assert_answered_and_stopped(telegram, completed.returncode, completed.stdout, completed.stderr)


def test_the_console_script_answers_and_stops_cleanly_on_ctrl_c(
    telegram: LocalBotApi, model_server: ScriptedModelServer
) -> None:
    """As a shell starts it (SIGINT its own), in a shell that also holds a deployed stack's
    settings: none of them reaches the local stack."""
    model_server.reply("Polled and answered.")
    process = subprocess.Popen(  # noqa: S603
        [CLI, "poll", "--env-file", "/nonexistent", "--long-poll", "1"],
        cwd=ROOT,
        env={**clean_environ(), **DEPLOYED_ONLY, **poll_env(telegram, model_server)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # Ctrl-C works whatever the suite inherited
    )
    try:
        wait_for(lambda: any(m == "getUpdates" for m, _ in telegram.calls), seconds=120)
        telegram.push_update(telegram_update("text_private"))
        wait_for(lambda: bool(telegram.messages))
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert_answered_and_stopped(telegram, process.returncode, stdout, stderr)


def assert_answered_and_stopped(
    telegram: LocalBotApi, returncode: int, stdout: str, stderr: str
) -> None:
    assert returncode == 0, stderr
    assert telegram.messages[0].plain_text == "Polled and answered."
    assert "Polling Telegram as @nano_lambda_bot" in stderr
    assert "update 800000001 (message, chat 111111111): queued" in stdout
    assert "Stopped." in stderr and "Traceback" not in stderr
    assert TOKEN not in stdout + stderr
    assert telegram.pending == []  # acknowledged before exiting


def test_a_set_webhook_is_explained_not_deleted(
    telegram: LocalBotApi, model_server: ScriptedModelServer
) -> None:
    telegram.webhook.url = "https://abc.execute-api.us-east-1.amazonaws.com/webhook"
    completed = run_cli("poll", "--env-file", "/nonexistent", env=poll_env(telegram, model_server))
    assert completed.returncode == 2
    (line,) = completed.stderr.splitlines()
    assert line.startswith("error: a webhook is set for this bot")
    assert "nanobot-lambda webhook delete" in line
    assert "deleteWebhook" not in [method for method, _ in telegram.calls]
    assert telegram.webhook.url


def test_without_allow_from_it_refuses_to_open_the_bot(
    telegram: LocalBotApi, model_server: ScriptedModelServer
) -> None:
    env = poll_env(telegram, model_server)
    del env["ALLOW_FROM"]
    completed = run_cli("poll", "--env-file", "/nonexistent", env=env)
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: set ALLOW_FROM to your Telegram user id")
    assert telegram.calls == []
