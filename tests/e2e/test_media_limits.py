"""Files refused or re-typed, through the whole stack: over MEDIA_MAX_BYTES or Telegram's 20 MB
getFile limit the user gets a notice at once (and the model is told); a declared type that
the bytes contradict is not believed; a document that expands too much is kept but not read,
and the user is told why."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.bot_api import GET_FILE_MAX_BYTES
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory, telegram_update
from tests.support.documents import MIB, docx_bomb
from tests.support.hostile_names import seen_sent
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111  # the fixtures' sender: a person beside the owner (the local user)
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 20  # 5129 bytes


def send_document(stack: LocalStack, document: dict[str, Any]) -> None:
    update = telegram_update("document_pdf")
    update["message"]["document"] = document
    assert json.loads(stack.post_update(update)["body"])["status"] == "queued"
    stack.process_queue()
    assert stack.poller.failures == 0


def uploads(stack: LocalStack) -> list[str]:
    return [entry.path for entry in stack.workspace_of(ADA).list_files(f"uploads/{ADA}")]


def test_a_file_over_media_max_bytes_is_refused_with_a_notice(
    stack_factory: StackFactory,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEDIA_MAX_BYTES", "1000")
    stack = stack_factory()
    stack.bot_api.add_file("doc-5k", PDF, "documents/file_20.pdf", file_unique_id="AgADk5")
    model_server.reply("Could you send a smaller file?")
    # No size in the update: getFile tells the size, and the bot stops there. The sender named
    # the file: the notice shows the name as text (no link, no mention), the model reads it as is.
    name = "[a](https://evil.example) @admin.pdf"
    send_document(stack, {"file_id": "doc-5k", "file_unique_id": "AgADk5", "file_name": name})

    notice, answer = [seen_sent([message]) for message in stack.bot_api.messages]
    what = f'document "{name}"'
    assert notice.text == texts.render("media_too_large_notice", what=what, limit="1.0 KB")
    assert notice.entities == [] and "<a" not in notice.html
    assert answer.text == "Could you send a smaller file?"
    assert stack.bot_api.downloads == []  # never downloaded
    assert uploads(stack) == []
    told = model_server.requests[0]["messages"][-1]["content"]
    assert texts.render("media_too_large", what=what, limit="1.0 KB") in told


def test_a_file_over_telegrams_20_mb_limit_is_refused_with_a_notice(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    big = bytes(GET_FILE_MAX_BYTES + 1)
    stack.bot_api.add_file("doc-big", big, "documents/file_21.zip", file_unique_id="AgADbg")
    model_server.reply("That one is too big for me.")
    send_document(stack, {"file_id": "doc-big", "file_unique_id": "AgADbg", "file_name": "b.zip"})

    replies = seen_sent(stack.bot_api.messages).text.split("\n")
    assert replies == [
        texts.render("media_too_large_notice", what='document "b.zip"', limit="20.0 MB"),
        "That one is too big for me.",
    ]
    assert ("getFile", "doc-big") in [
        (method, params.get("file_id")) for method, params in stack.bot_api.calls
    ]
    assert stack.bot_api.downloads == []
    assert uploads(stack) == []


def test_a_declared_type_the_bytes_contradict_is_not_believed(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.bot_api.add_file("doc-lie", PDF, "documents/file_22.jpg", file_unique_id="AgADli")
    model_server.reply("That is a PDF, not a photo.")
    send_document(
        stack,
        {
            "file_id": "doc-lie",
            "file_unique_id": "AgADli",
            "file_name": "holiday.jpg",
            "mime_type": "image/jpeg",
            "file_size": len(PDF),
        },
    )
    content = model_server.requests[0]["messages"][-1]["content"]
    assert isinstance(content, str)  # no image part: the model is not shown a "photo"
    assert '"holiday.jpg" (application/pdf, 5.1 KB)' in content
    assert uploads(stack) == [f"uploads/{ADA}/2025-11/AgADli.pdf"]
    stored = stack.workspace_of(ADA).read(f"uploads/{ADA}/2025-11/AgADli.pdf")
    assert stored is not None and stored.data == PDF


def test_a_docx_zip_bomb_is_stored_refused_with_a_notice_and_the_turn_goes_on(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """350 KB that python-docx once turned into 1.5 GB: refused from its ZIP directory in the
    child that reads documents, the user told why, the file kept, the turn answered."""
    bomb = docx_bomb(100 * MIB)
    stack.bot_api.add_file("doc-bomb", bomb, "documents/file_23.docx", file_unique_id="AgADbm")
    model_server.reply("I could not read that one, sorry.")
    send_document(
        stack,
        {"file_id": "doc-bomb", "file_unique_id": "AgADbm", "file_name": "report.docx"},
    )

    reason = "too large to read: it expands to more than 64 MB"
    replies = [message.plain_text for message in stack.bot_api.messages]
    assert replies == [
        texts.render(  # the file's name shown as text: no link forms (texts.literal)
            "media_document_too_large_notice",
            filename=f"report.{texts.WORD_JOINER}docx",
            reason=reason,
        ),
        "I could not read that one, sorry.",
    ]
    told = model_server.requests[0]["messages"][-1]["content"]
    assert f"its text not read: {reason}. The user has already been told" in told
    path = f"uploads/{ADA}/2025-11/AgADbm.docx"
    assert uploads(stack) == [path]
    stored = stack.workspace_of(ADA).read(path)
    assert stored is not None and stored.data == bomb
