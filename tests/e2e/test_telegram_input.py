"""Telegram input beyond text, through the whole stack: photos, voice, documents, replies,
forwards, groups and forum topics.

Files come from the local Bot API (`getFile` + the token-bearing download URL), land in the S3
workspace under uploads/, and reach the scripted model over real HTTP; transcription goes
through litellm to the scripted server's `/v1/audio/transcriptions`.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.telegram.media import human_size
from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.documents import pdf
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111  # the fixtures' sender: a person beside the owner (the local user)
MONTH = f"uploads/{ADA}/2025-11"  # the fixtures are dated 2025-11-22
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(range(256)) * 40
OGG = b"OggS\x00\x02\x00\x00" + bytes(range(256)) * 8
PDF = pdf("Invoice 42: three boxes of tea", "Total: 18 EUR")
GROUP = -1001234567890
FORUM = -1009876543210


def session(stack: LocalStack, key: str) -> list[dict[str, Any]]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return store.load(key, 100).messages


def turn(stack: LocalStack, name: str, **changes: Any) -> dict[str, Any]:
    update = telegram_update(name)
    update["message"].update(changes)
    response = stack.post_update(update)
    assert json.loads(response["body"])["status"] == "queued"
    stack.process_queue()
    assert stack.poller.failures == 0
    return update


def user_content(model_server: ScriptedModelServer, index: int = 0) -> Any:
    return model_server.requests[index]["messages"][-1]["content"]


def add_photo(stack: LocalStack) -> None:
    stack.bot_api.add_file(
        "AgACAgQAAxkBAAIBPhotoLarge", JPEG, "photos/file_3.jpg", file_unique_id="AQADs3"
    )


def add_voice(stack: LocalStack) -> None:
    stack.bot_api.add_file("AwACAgQAAxkBAAIBVoice", OGG, "voice/file_9.oga")


# -- photos ------------------------------------------------------------------------------------


def test_photo_reaches_the_model_as_an_image_and_is_saved_as_a_placeholder(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    add_photo(stack)
    model_server.reply("A sunset over the sea.").reply("You sent a sunset.")
    turn(stack, "photo_with_caption")

    # The request carries the runtime block, the image (base64 of the very bytes), the text.
    runtime, image, text = user_content(model_server)
    assert runtime["type"] == "text" and "[Runtime context" in runtime["text"]
    expected_url = "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()
    assert image == {"type": "image_url", "image_url": {"url": expected_url}}
    path = f"{MONTH}/AQADs3.jpg"
    assert text == {
        "type": "text",
        "text": f"{texts.render('media_image', path=path)}\nWhat is in this picture?",
    }

    # The file is in S3 under uploads/; the largest size was the one fetched.
    stored = stack.workspace_of(ADA).read(path)
    assert stored is not None and stored.data == JPEG
    assert stack.bot_api.downloads == ["photos/file_3.jpg"]
    assert [m.plain_text for m in stack.bot_api.messages] == ["A sunset over the sea."]

    # The session keeps the placeholder and the path, never the bytes.
    saved = session(stack, f"telegram:{ADA}")
    assert saved[0]["content"] == text["text"]
    assert saved[0]["content"].startswith("[image]")
    assert base64.b64encode(JPEG).decode()[:64] not in json.dumps(saved)

    # The next turn sends the history as saved: no image part any more (the one message not
    # sent again as first sent), the runtime block it came with still at its head.
    stack.post_update(stack.text_update("and now?", chat_id=ADA))
    stack.process_queue()
    history = model_server.requests[1]["messages"]
    assert history[1] == {"role": "user", "content": f"{runtime['text']}\n\n{text['text']}"}
    assert "base64" not in json.dumps(history[1:-1])


def test_no_token_in_logs_or_model_requests_during_a_photo_turn(
    stack: LocalStack, model_server: ScriptedModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    add_photo(stack)
    model_server.reply("Nice photo.")
    with caplog.at_level(logging.DEBUG):
        turn(stack, "photo_with_caption")
    assert stack.bot_api.downloads == ["photos/file_3.jpg"]  # the token-bearing URL was used
    records = [*stack.log_sink.records, *caplog.records]
    assert records
    logged = "\n".join(
        logging.Formatter().format(record) + str(record.__dict__) for record in records
    )
    encoded = base64.b64encode(JPEG).decode()
    for secret in (stack.bot_token, stack.bot_token.split(":", 1)[1], "/file/bot", encoded[:64]):
        assert secret not in logged
    for request in model_server.requests:
        assert stack.bot_token not in json.dumps(request)
        assert "/file/bot" not in json.dumps(request)


# -- voice -------------------------------------------------------------------------------------


def test_voice_note_is_transcribed_when_a_model_is_configured(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(TranscriptionModel=ScriptedModelServer.TRANSCRIPTION_MODEL)
    add_voice(stack)
    model_server.transcribe("remind me to buy milk").reply("I will remind you.")
    turn(stack, "voice")

    (transcription,) = model_server.transcriptions
    assert transcription.model == "whisper-1"
    assert transcription.filename == "voice.ogg"
    assert transcription.data == OGG
    assert transcription.headers.get("Authorization") == "Bearer sk-test-scripted"
    content = user_content(model_server)
    assert content.endswith("\n\n[voice message, transcribed]: remind me to buy milk")
    assert session(stack, f"telegram:{ADA}")[0]["content"] == (
        "[voice message, transcribed]: remind me to buy milk"
    )
    stored = stack.workspace_of(ADA).read(f"{MONTH}/AgADv1.ogg")
    assert stored is not None and stored.data == OGG


def test_a_voice_note_is_answered_with_the_text_then_a_voice_note_when_tts_is_set(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(
        TranscriptionModel=ScriptedModelServer.TRANSCRIPTION_MODEL,
        TtsModel=ScriptedModelServer.SPEECH_MODEL,
    )
    add_voice(stack)
    model_server.transcribe("remind me to buy milk").reply("I will remind you about the milk.")
    turn(stack, "voice")

    assert [m.plain_text for m in stack.bot_api.messages] == ["I will remind you about the milk."]
    (voice,) = stack.bot_api.files_sent
    assert (voice.method, voice.chat_id) == ("sendVoice", ADA)
    assert voice.data == ScriptedModelServer.SPEECH_AUDIO
    (speech,) = model_server.speeches
    assert speech["input"] == "I will remind you about the milk."
    # The text is the record: the session holds it, not the audio.
    assert session(stack, f"telegram:{ADA}")[-1]["content"] == "I will remind you about the milk."


def test_voice_note_without_transcription_is_announced_as_unheard(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    add_voice(stack)
    model_server.reply("Sorry, I can't listen to voice messages; could you type it?")
    turn(stack, "voice")
    unheard = texts.render("media_voice_unheard", duration=4, path=f"{MONTH}/AgADv1.ogg")
    assert user_content(model_server).endswith(f"\n\n{unheard}")
    assert "cannot hear" in unheard
    assert model_server.transcriptions == []
    assert stack.workspace_of(ADA).read(f"{MONTH}/AgADv1.ogg") is not None


def test_failed_transcription_falls_back_to_unheard(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(TranscriptionModel=ScriptedModelServer.TRANSCRIPTION_MODEL)
    add_voice(stack)
    model_server.fail_transcription(400).reply("I couldn't make that out.")
    turn(stack, "voice")
    assert len(model_server.transcriptions) == 1
    assert "could not be transcribed" in user_content(model_server)
    assert [m.plain_text for m in stack.bot_api.messages] == ["I couldn't make that out."]
    assert any("transcription failed" in r.getMessage() for r in stack.log_sink.records)


# -- documents ---------------------------------------------------------------------------------


def test_a_pdf_is_stored_and_its_text_given_to_the_model(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.bot_api.add_file("BQACAgQAAxkBAAIBDoc", PDF, "documents/file_5.pdf")
    model_server.reply("Invoice 42: three boxes of tea, 18 EUR in total.")
    turn(stack, "document_pdf")
    path = f"{MONTH}/AgADd1.pdf"
    extracted = "--- page 1 ---\nInvoice 42: three boxes of tea\n\n--- page 2 ---\nTotal: 18 EUR"
    note = texts.render(
        "media_document_extracted",
        filename="invoice.pdf",
        type="application/pdf",
        size=human_size(len(PDF)),
        path=path,
        pages=", 2 pages",
        more="",
        text=extracted,
    )
    assert user_content(model_server).endswith(f"\n\n{note}\nsummarize this")
    stored = stack.workspace_of(ADA).read(path)
    assert stored is not None and stored.data == PDF
    beside = stack.workspace_of(ADA).read(f"{path}.txt")
    assert beside is not None and beside.text == extracted
    assert session(stack, f"telegram:{ADA}")[0]["content"] == f"{note}\nsummarize this"


def test_text_document_is_read_by_the_model_with_read_file(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.bot_api.add_file("doc-notes", b"- milk\n- eggs\n", "documents/file_6.txt")
    document = {
        "file_id": "doc-notes",
        "file_unique_id": "AgADt1",
        "file_name": "groceries.txt",
        "mime_type": "text/plain",
        "file_size": 14,
    }
    path = f"{MONTH}/AgADt1.txt"
    model_server.call_tool("read_file", {"path": path}).reply("Milk and eggs.")
    turn(stack, "document_pdf", document=document, caption="what's on it?")
    assert "read it with read_file" in user_content(model_server)
    tool_result = model_server.requests[1]["messages"][-1]
    assert (tool_result["role"], tool_result["content"]) == ("tool", "- milk\n- eggs\n")
    assert [m.plain_text for m in stack.bot_api.messages] == ["Milk and eggs."]


def test_file_telegram_cannot_serve_is_reported_to_the_model(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Could you send it again?")  # the file was never registered: 400
    turn(stack, "document_pdf")
    unavailable = texts.render("media_unavailable", what='document "invoice.pdf"')
    assert user_content(model_server).endswith(f"\n\n{unavailable}\nsummarize this")
    assert stack.bot_api.downloads == []


# -- replies and forwards ----------------------------------------------------------------------


def test_reply_to_the_bot_carries_the_quoted_message(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Reminder set for 9am.")
    turn(stack, "reply_to_bot")
    assert user_content(model_server).endswith(
        '\n\n[replying to your earlier message: "Shall I set a reminder for 9am?"]\nyes, do that'
    )


def test_forwarded_message_names_its_origin(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Noted: the meeting is at 3pm.")
    turn(stack, "forwarded")
    assert user_content(model_server).endswith("\n\n[forwarded from Bob]\nMeeting moved to 3pm")


# -- groups ------------------------------------------------------------------------------------


def test_group_message_without_mention_is_ignored(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    turn(stack, "group_no_mention")  # the webhook queues it: it cannot know the bot's name
    assert model_server.requests == []
    assert stack.bot_api.messages == []
    assert [method for method, _ in stack.bot_api.calls] == ["getMe"]  # not even "typing…"
    assert session(stack, f"telegram:{GROUP}") == []


def test_group_message_with_mention_is_answered_without_the_mention(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Dinner at 8, then the movie.")
    turn(stack, "group_mention")
    content = user_content(model_server)
    assert content.endswith("\n\nwhat's on the agenda?")
    assert "@nano_lambda_bot" not in content
    (reply,) = stack.bot_api.messages
    assert (reply.chat_id, reply.plain_text) == (GROUP, "Dinner at 8, then the movie.")
    assert session(stack, f"telegram:{GROUP}")[0]["content"] == "what's on the agenda?"


def test_open_group_policy_answers_every_message(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(GroupPolicy="open")
    model_server.reply("8 works.")
    turn(stack, "group_no_mention")
    assert [m.plain_text for m in stack.bot_api.messages] == ["8 works."]


def test_get_me_is_asked_once_per_container(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("first").reply("second")
    turn(stack, "group_mention")
    turn(stack, "group_no_mention", message_id=503)
    stack.post_update({**telegram_update("group_mention"), "update_id": 800000099})
    stack.process_queue()
    methods = [method for method, _ in stack.bot_api.calls]
    assert methods.count("getMe") == 1
    assert len(model_server.requests) == 2


def test_forum_topic_is_answered_in_its_thread(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("All green.")
    turn(stack, "forum_topic_message")
    (reply,) = stack.bot_api.messages
    assert (reply.chat_id, reply.thread_id, reply.plain_text) == (FORUM, 600, "All green.")
    assert user_content(model_server).endswith("\n\nstatus?")
    assert session(stack, f"telegram:{FORUM}:600")[0]["content"] == "status?"
