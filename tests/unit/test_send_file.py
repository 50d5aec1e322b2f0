"""The send_file tool: a workspace file to the chat, as the kind Telegram shows best, once
however often the turn runs, with a clear error for the model when it cannot be sent.

Turns run on in-memory fakes (see test_turns.py)."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.outgoing import MAX_PHOTO_BYTES, MAX_UPLOAD_BYTES, kind_for
from tests.support.fakes import ScriptedModel, text, tool
from tests.unit.test_turns import Bot, message

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def send(path: str, **arguments: str) -> tuple[str, str]:
    return "send_file", json.dumps({"path": path, **arguments})


def bot_sending(path: str, **arguments: str) -> Bot:
    name, call = send(path, **arguments)
    return Bot(ScriptedModel(tool(name, call), text("There you go."), text("There you go.")))


def tool_result(bot: Bot) -> str:
    """What the model was told by the send_file call (the last message of its second request)."""
    return str(bot.model.requests[1][0][-1]["content"])


@pytest.mark.parametrize(
    ("name", "size", "kind"),
    [
        ("plot.png", 1_000, "photo"),
        ("photo.JPG", 1_000, "photo"),
        ("huge.png", MAX_PHOTO_BYTES + 1, "document"),  # too large for a photo
        ("note.ogg", 1_000, "voice"),
        ("song.mp3", 1_000, "audio"),
        ("report.pdf", 1_000, "document"),
        ("animation.gif", 1_000, "document"),
        ("no-suffix", 1_000, "document"),
    ],
)
def test_each_file_goes_as_the_kind_telegram_shows_best(name: str, size: int, kind: str) -> None:
    assert kind_for(name, size) == kind


def test_a_workspace_file_is_sent_with_its_caption_and_the_model_is_told() -> None:
    bot = bot_sending("out/plot.png", caption="Sales, by month")
    bot.workspace.files["out/plot.png"] = PNG
    bot.process(message("plot my sales"))

    ((chat_id, sent, thread_id),) = bot.channel.files_sent
    assert (sent.name, sent.data, sent.kind, sent.caption) == (
        "plot.png",
        PNG,
        "photo",
        "Sales, by month",
    )
    assert (chat_id, thread_id) == (111111111, None)
    assert tool_result(bot) == "Sent out/plot.png to the chat as a photo."
    assert bot.said == ["There you go."]


def test_a_retried_turn_does_not_send_the_file_again() -> None:
    bot = bot_sending("report.pdf")
    bot.workspace.files["report.pdf"] = b"%PDF-1.7 a report"
    bot.channel.fail_on = "There you go."  # the final answer fails: SQS retries the job
    with pytest.raises(ChannelError):
        bot.process(message("send the report"))
    bot.process(message("send the report"))

    assert len(bot.channel.files_sent) == 1
    assert bot.said == ["There you go."]


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("missing.pdf", "file not found: missing.pdf"),
        ("../../etc/passwd", "Error: "),
        ("/etc/passwd", "Error: "),
    ],
)
def test_what_cannot_be_sent_is_a_clear_error_for_the_model(path: str, error: str) -> None:
    bot = bot_sending(path)
    bot.process(message("send it"))

    assert bot.channel.files_sent == []
    assert tool_result(bot).startswith("Error: ") and error in tool_result(bot)


def test_a_file_over_telegrams_upload_limit_is_refused_before_it_is_read() -> None:
    bot = bot_sending("video.mp4")
    bot.workspace.files["video.mp4"] = b"\x00" * (MAX_UPLOAD_BYTES + 1)
    bot.process(message("send the video"))

    assert bot.channel.files_sent == []
    assert "50.0 MB; Telegram takes files of at most 50 MB" in tool_result(bot)


def test_an_image_telegram_refuses_as_a_photo_goes_as_a_document() -> None:
    bot = bot_sending("scan.png")
    bot.workspace.files["scan.png"] = PNG
    bot.channel.fail_with = ChannelError(
        "sendPhoto", 400, "Bad Request: IMAGE_PROCESS_FAILED", kind="refused"
    )
    bot.process(message("send the scan"))

    ((_, sent, _),) = bot.channel.files_sent
    assert sent.kind == "document" and sent.data == PNG
    assert tool_result(bot) == "Sent scan.png to the chat as a document."


def test_another_refusal_is_told_to_the_model() -> None:
    bot = bot_sending("report.pdf")
    bot.workspace.files["report.pdf"] = b"%PDF"
    bot.channel.fail_with = ChannelError(
        "sendDocument", 400, "Bad Request: file is empty", kind="refused"
    )
    bot.process(message("send it"))

    assert bot.channel.files_sent == []
    assert tool_result(bot).startswith("Error: Telegram refused report.pdf")
