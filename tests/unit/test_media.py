"""Media resolution: what the model sees, what the session keeps, what lands in the workspace."""

from __future__ import annotations

import base64
import logging
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nanobot_lambda.adapters import documents
from nanobot_lambda.adapters.llm.transcription import LitellmTranscriber, transcriber_for
from nanobot_lambda.adapters.telegram.client import FileTooLarge, TelegramError
from nanobot_lambda.adapters.telegram.media import (
    DOCUMENT_CONTEXT_CHARS,
    DOCUMENTS_READ_SECONDS,
    MediaResolver,
    UserContent,
    choose_photo,
    human_size,
    looks_like_text,
    mime_type,
    sniff_image,
)
from nanobot_lambda.adapters.telegram.models import Message, PhotoSize, Update, User
from nanobot_lambda.core import texts
from nanobot_lambda.core.context import ContextBuilder, RuntimeContext
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import ToolCall, Transcript
from nanobot_lambda.settings import AgentSettings, InputSettings
from nanobot_lambda.tools.files import file_tools
from tests.conftest import telegram_update
from tests.support.documents import MIB, docx, docx_bomb, pdf, xlsx_bomb
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import JobTools
from tests.support.settings import AGENT_ENV

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)) * 8
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(64)
GIF = b"GIF89a" + bytes(32)
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(32)
OGG = b"OggS\x00\x02" + bytes(500)
PDF = pdf("Invoice 42: three boxes of tea", "Total: 18 EUR")
MONTH = "uploads/111111111/2025-11"  # the fixtures' message date is 2025-11-22
BOT_USER = User(id=7000000001, is_bot=True, first_name="Nano", username="nano_lambda_bot")


class FakeBot:
    """The Bot API calls the resolver makes, in memory, with Telegram's errors."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, bytes]] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail_with: TelegramError | None = None
        self.report_size: int | None = None  # what getFile claims, when it should lie

    def add(self, file_id: str, data: bytes, path: str = "documents/file_1") -> None:
        self.files[file_id] = (path, data)

    def get_me(self) -> User:
        self.calls.append(("getMe", ""))
        return BOT_USER

    def get_file(self, file_id: str) -> tuple[str, int | None]:
        self.calls.append(("getFile", file_id))
        if self.fail_with is not None:
            raise self.fail_with
        if file_id not in self.files:
            raise TelegramError("getFile", 400, "Bad Request: invalid file_id")
        path, data = self.files[file_id]
        if len(data) > 20 * 1024 * 1024:
            raise FileTooLarge("getFile", 400, "Bad Request: file is too big")
        return path, self.report_size if self.report_size is not None else len(data)

    def download(self, file_path: str, max_bytes: int) -> bytes:
        self.calls.append(("download", file_path))
        data = next(data for path, data in self.files.values() if path == file_path)
        if len(data) > max_bytes:
            raise FileTooLarge("download", None, f"file is larger than {max_bytes} bytes")
        return data

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]


class FakeTranscriber:
    def __init__(self, text: str = "", error: Exception | None = None) -> None:
        self.text = text
        self.error = error
        self.calls: list[tuple[str, bytes]] = []

    def transcribe(self, filename: str, data: bytes) -> Transcript:
        self.calls.append((filename, data))
        if self.error is not None:
            raise self.error
        return Transcript(self.text)


def settings(**values: Any) -> InputSettings:
    return InputSettings.model_validate({key.upper(): value for key, value in values.items()})


def message(name: str, **changes: Any) -> Message:
    raw = telegram_update(name)
    raw["message"].update(changes)
    parsed = Update.model_validate(raw).message
    assert parsed is not None
    return parsed


def resolver(
    bot: FakeBot,
    workspace: MemoryWorkspace | None = None,
    transcriber: FakeTranscriber | None = None,
    **values: Any,
) -> MediaResolver:
    return MediaResolver(bot, workspace or MemoryWorkspace(), settings(**values), transcriber)


def parts(content: UserContent, kind: str) -> list[dict[str, Any]]:
    assert isinstance(content.model_content, list)
    return [part for part in content.model_content if part["type"] == kind]


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


# -- photos ------------------------------------------------------------------------------------


def test_photo_becomes_an_image_part_and_a_placeholder() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("AgACAgQAAxkBAAIBPhotoLarge", JPEG, "photos/file_3.jpg")
    content = resolver(bot, workspace).resolve(message("photo_with_caption"), 111111111)

    path = f"{MONTH}/AQADs3.jpg"
    assert workspace.files[path] == JPEG
    (image,) = parts(content, "image_url")
    assert image == {"type": "image_url", "image_url": {"url": data_url("image/jpeg", JPEG)}}
    (text,) = parts(content, "text")
    note = texts.render("media_image", path=path)
    assert text["text"] == f"{note}\nWhat is in this picture?"
    assert note.startswith("[image]")
    assert content.saved_text == text["text"]
    assert content.stored == (path,)
    assert base64.b64encode(JPEG).decode()[:40] not in content.saved_text
    assert bot.calls == [
        ("getFile", "AgACAgQAAxkBAAIBPhotoLarge"),
        ("download", "photos/file_3.jpg"),
    ]


def test_photo_picks_the_largest_size_under_the_inline_cap() -> None:
    bot = FakeBot()
    bot.add("AgACAgQAAxkBAAIBPhotoMedium", JPEG, "photos/file_2.jpg")
    resolver(bot, image_max_bytes=50_000).resolve(message("photo_with_caption"), 111111111)
    assert ("getFile", "AgACAgQAAxkBAAIBPhotoMedium") in bot.calls


def test_photo_larger_than_the_inline_cap_is_stored_but_not_shown() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    big = JPEG + bytes(10_000)
    photo = [{"file_id": "big", "file_unique_id": "UBig", "width": 4000, "height": 3000}]
    bot.add("big", big, "photos/big.jpg")
    content = resolver(bot, workspace, image_max_bytes=5_000).resolve(
        message("photo_with_caption", photo=photo, caption=None), 111111111
    )
    assert isinstance(content.model_content, str)
    assert content.model_content == texts.render(
        "media_image_not_shown",
        size=human_size(len(big)),
        limit=human_size(5_000),
        path=f"{MONTH}/UBig.jpg",
    )
    assert workspace.files[f"{MONTH}/UBig.jpg"] == big


def test_photo_bytes_that_are_no_image_are_not_sent_as_one() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("AgACAgQAAxkBAAIBPhotoLarge", b"<html>not a photo</html>", "photos/file_3.jpg")
    content = resolver(bot, workspace).resolve(message("photo_with_caption"), 111111111)
    assert isinstance(content.model_content, str)
    assert content.model_content.startswith(
        texts.render("media_image_unreadable", path=f"{MONTH}/AQADs3.jpg")
    )


def test_photo_with_every_size_over_the_cap_is_not_downloaded() -> None:
    bot = FakeBot()
    content = resolver(bot, media_max_bytes=1000).resolve(message("photo_with_caption"), 1)
    assert bot.calls == []
    assert content.saved_text.startswith(
        texts.render("media_too_large", what="photo", limit=human_size(1000))
    )


# -- voice and audio ---------------------------------------------------------------------------


def test_voice_is_transcribed_and_tagged() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("AwACAgQAAxkBAAIBVoice", OGG, "voice/file_9.oga")
    transcriber = FakeTranscriber("remind me to buy milk")
    content = resolver(bot, workspace, transcriber).resolve(message("voice"), 111111111)
    assert content.model_content == "[voice message, transcribed]: remind me to buy milk"
    assert content.saved_text == content.model_content
    assert transcriber.calls == [("voice.ogg", OGG)]
    assert workspace.files[f"{MONTH}/AgADv1.ogg"] == OGG


def test_voice_without_a_transcriber_cannot_be_heard() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("AwACAgQAAxkBAAIBVoice", OGG, "voice/file_9.oga")
    content = resolver(bot, workspace).resolve(message("voice"), 111111111)
    path = f"{MONTH}/AgADv1.ogg"
    assert content.model_content == texts.render("media_voice_unheard", duration=4, path=path)
    assert "cannot hear" in content.saved_text
    assert workspace.files[path] == OGG


def test_failed_transcription_falls_back_and_logs_no_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = FakeBot()
    bot.add("AwACAgQAAxkBAAIBVoice", OGG, "voice/file_9.oga")
    error = ModelError("transcription failed (RuntimeError, status 503)")
    with caplog.at_level(logging.DEBUG):
        content = resolver(bot, transcriber=FakeTranscriber(error=error)).resolve(
            message("voice"), 111111111
        )
    assert "cannot hear" in content.saved_text
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage() == "transcription failed (RuntimeError, status 503)"


def test_empty_transcription_counts_as_unheard() -> None:
    bot = FakeBot()
    bot.add("AwACAgQAAxkBAAIBVoice", OGG, "voice/file_9.oga")
    content = resolver(bot, transcriber=FakeTranscriber("")).resolve(message("voice"), 1)
    assert "could not be transcribed" in content.saved_text


def test_audio_keeps_its_name_and_extension() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("aud", b"ID3" + bytes(100), "music/file_1.mp3")
    audio = {
        "file_id": "aud",
        "file_unique_id": "AgADa1",
        "file_name": "Song.MP3",
        "mime_type": "audio/mpeg",
        "duration": 200,
    }
    transcriber = FakeTranscriber("la la la")
    content = resolver(bot, workspace, transcriber).resolve(
        message("voice", voice=None, audio=audio, caption="what song is this?"), 111111111
    )
    assert content.model_content == '[audio "Song.MP3", transcribed]: la la la\nwhat song is this?'
    assert transcriber.calls[0][0] == "audio.mp3"
    assert f"{MONTH}/AgADa1.mp3" in workspace.files


# -- documents ---------------------------------------------------------------------------------


def test_document_is_stored_and_announced() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("BQACAgQAAxkBAAIBDoc", PDF, "documents/file_5.pdf")
    content = resolver(bot, workspace).resolve(message("document_pdf"), 111111111)
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
    assert content.model_content == f"{note}\nsummarize this"
    assert workspace.files[path] == PDF
    assert workspace.files[f"{path}.txt"] == extracted.encode()  # for read_file


def test_a_long_documents_text_starts_in_the_message_and_is_whole_beside_it() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    pages = [f"Chapter {n}: " + "the garden grows " * 60 for n in range(1, 30)]
    bot.add("BQACAgQAAxkBAAIBDoc", pdf(*pages), "documents/file_5.pdf")
    content = resolver(bot, workspace).resolve(message("document_pdf"), 111111111)
    path = f"{MONTH}/AgADd1.pdf"
    whole = workspace.files[f"{path}.txt"].decode()
    assert "Chapter 29" in whole and "Chapter 29" not in str(content.model_content)
    assert f"the start of it; the text read is in {path}.txt" in str(content.model_content)
    assert len(str(content.model_content)) < DOCUMENT_CONTEXT_CHARS + 1_000


def test_a_docx_is_stored_as_docx_and_its_text_given_to_the_model() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    letter = docx("Dear Ada,", "The seeds arrive on Monday.")
    bot.add("docx-id", letter, "documents/file_7.docx")
    document = {
        "file_id": "docx-id",
        "file_unique_id": "AgADx1",
        "file_name": "letter.docx",
        "mime_type": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "file_size": len(letter),
    }
    content = resolver(bot, workspace).resolve(
        message("document_pdf", document=document, caption=None), 111111111
    )
    assert "Dear Ada,\nThe seeds arrive on Monday." in str(content.model_content)
    assert workspace.files[f"{MONTH}/AgADx1.docx"] == letter


def test_an_encrypted_pdf_is_stored_and_the_model_is_told_why_it_cannot_be_read() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    locked = pdf("the secret plan", password="hunter2")
    bot.add("BQACAgQAAxkBAAIBDoc", locked, "documents/file_5.pdf")
    content = resolver(bot, workspace).resolve(message("document_pdf"), 111111111)
    assert "it is encrypted (password-protected)" in str(content.model_content)
    assert "secret plan" not in str(content.model_content)
    assert workspace.files[f"{MONTH}/AgADd1.pdf"] == locked


def hostile_document(name: str, data: bytes, mime: str | None = None) -> Message:
    document = {"file_id": "hostile", "file_unique_id": "AgADh0", "file_name": name}
    if mime is not None:
        document["mime_type"] = mime
    return message("document_pdf", document=document, caption="what is in it?")


def test_a_docx_zip_bomb_is_stored_the_user_told_why_it_is_not_read_and_the_turn_goes_on() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bomb = docx_bomb(100 * MIB)
    bot.add("hostile", bomb, "documents/file_9.docx")
    content = resolver(bot, workspace).resolve(hostile_document("report.docx", bomb), 111111111)
    path = f"{MONTH}/AgADh0.docx"
    reason = "too large to read: it expands to more than 64 MB"
    assert content.model_content == (
        texts.render(
            "media_document_too_large",
            filename="report.docx",
            type=documents.DOCX,
            size=human_size(len(bomb)),
            path=path,
            reason=reason,
        )
        + "\nwhat is in it?"
    )
    assert content.notices == (
        f'I saved "{texts.literal("report.docx")}", but I cannot read its text: it is {reason}.',
    )
    assert workspace.files[path] == bomb  # kept: within MEDIA_MAX_BYTES, nothing is lost
    assert f"{path}.txt" not in workspace.files


def test_documents_of_one_message_share_the_time_for_reading_them() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("hostile", PDF, "documents/file_5.pdf")
    now = iter([0.0, DOCUMENTS_READ_SECONDS - 0.5])  # the others took all but half a second
    media = MediaResolver(bot, workspace, settings(), clock=lambda: next(now))
    content = media.resolve(hostile_document("invoice.pdf", PDF), 111111111)
    reason = "too slow to read: the files sent with it used up the time for reading"
    assert f"its text not read: {reason}" in str(content.model_content)
    assert content.notices == (
        f'I saved "{texts.literal("invoice.pdf")}", but I cannot read its text: it is {reason}.',
    )
    assert workspace.files[f"{MONTH}/AgADh0.pdf"] == PDF


@pytest.mark.parametrize(
    ("name", "make", "note"),
    [
        # Nothing in agent_turn unpacks an XLSX: it is a stored binary file.
        ("sheet.xlsx", lambda: xlsx_bomb(200 * MIB), "media_document_binary"),
        # Text is checked for UTF-8 a megabyte at a time: never one 75 MB string.
        ("notes.txt", lambda: "\U0001f331 grows\n".encode() * 1_700_000, "media_document_text"),
        # An image too large to show is stored, and never decoded.
        ("scan.png", lambda: PNG + bytes(19_000_000), "media_document_binary"),
    ],
    ids=["xlsx bomb", "19 MB of text", "19 MB image"],
)
def test_a_large_or_expanding_file_is_stored_in_bounded_memory(
    name: str, make: Callable[[], bytes], note: str
) -> None:
    data = make()
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("hostile", data, f"documents/{name}")
    tracemalloc.start()
    try:
        content = resolver(bot, workspace).resolve(hostile_document(name, data), 111111111)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000  # beyond the file itself, which the download holds
    assert texts.load(note).split("$")[0] in str(content.model_content)
    assert [path for path in workspace.files if path.startswith(MONTH)] == [
        f"{MONTH}/AgADh0.{name.rsplit('.', 1)[1]}"
    ]


def test_text_document_is_readable_with_read_file() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    notes = "# Notes\n- milk\n- café\n"
    bot.add("txt", notes.encode(), "documents/file_6.txt")
    document = {
        "file_id": "txt",
        "file_unique_id": "AgADt1",
        "file_name": "notes.txt",
        "mime_type": "text/plain",
    }
    content = resolver(bot, workspace).resolve(
        message("document_pdf", document=document, caption=None), 111111111
    )
    path = f"{MONTH}/AgADt1.txt"
    assert "read it with read_file" in content.saved_text and path in content.saved_text
    tools = JobTools(file_tools(), workspace)
    result = tools.execute(ToolCall("c1", "read_file", f'{{"path": "{path}"}}'))
    assert "- café" in result


def test_each_documents_stored_text_is_told_for_recall() -> None:
    bot, workspace, told = FakeBot(), MemoryWorkspace(), []
    bot.add("BQACAgQAAxkBAAIBDoc", PDF, "documents/file_5.pdf")
    bot.add("txt", b"- milk\n- caf\xc3\xa9\n", "documents/file_6.txt")
    text_file = {"file_id": "txt", "file_unique_id": "AgADt1", "file_name": "notes.txt"}
    media = MediaResolver(
        bot, workspace, settings(), on_document=lambda path, text: told.append((path, text))
    )
    media.resolve(message("document_pdf"), 111111111)
    media.resolve(message("document_pdf", document=text_file, caption=None), 111111111)
    pdf_text = workspace.files[f"{MONTH}/AgADd1.pdf.txt"].decode()
    assert told == [
        (f"{MONTH}/AgADd1.pdf.txt", pdf_text),
        (f"{MONTH}/AgADt1.txt", "- milk\n- café\n"),
    ]


def test_document_type_is_sniffed_for_images() -> None:
    bot = FakeBot()
    bot.add("img", PNG, "documents/file_7")
    document = {
        "file_id": "img",
        "file_unique_id": "AgADp1",
        "file_name": "scan",
        "mime_type": "application/octet-stream",
    }
    content = resolver(bot).resolve(message("document_pdf", document=document), 111111111)
    (image,) = parts(content, "image_url")
    assert image["image_url"]["url"] == data_url("image/png", PNG)
    assert content.saved_text.startswith('[image] (document "scan", image/png')
    assert f"{MONTH}/AgADp1.png" in content.saved_text


def test_a_declared_image_type_is_not_trusted() -> None:
    bot = FakeBot()
    bot.add("fake", b"just text pretending", "documents/file_8.jpg")
    document = {
        "file_id": "fake",
        "file_unique_id": "AgADf1",
        "file_name": "photo.jpg",
        "mime_type": "image/jpeg",
    }
    content = resolver(bot).resolve(message("document_pdf", document=document), 111111111)
    assert isinstance(content.model_content, str)  # no image part
    assert "(text/plain," in content.saved_text  # what the bytes are, not the claim
    assert f"{MONTH}/AgADf1.txt" in content.saved_text  # nor its name's extension
    assert "read it with read_file" in content.saved_text


def test_oversized_document_is_not_downloaded() -> None:
    bot = FakeBot()
    content = resolver(bot, media_max_bytes=10_000).resolve(message("document_pdf"), 111111111)
    assert bot.calls == []
    assert content.saved_text == (
        texts.render("media_too_large", what='document "invoice.pdf"', limit="10.0 KB")
        + "\nsummarize this"
    )


def test_telegram_refusing_a_big_file_is_reported_as_too_large() -> None:
    bot = FakeBot()
    bot.fail_with = FileTooLarge("getFile", 400, "Bad Request: file is too big")
    document = {"file_id": "huge", "file_unique_id": "AgADh1", "file_name": "movie.mkv"}
    content = resolver(bot).resolve(message("document_pdf", document=document), 111111111)
    assert content.saved_text.startswith('[document "movie.mkv" not downloaded')


def test_a_download_larger_than_announced_stops_at_the_cap() -> None:
    bot = FakeBot()
    bot.add("BQACAgQAAxkBAAIBDoc", bytes(5000), "documents/file_5.pdf")
    bot.report_size = 10  # getFile understates; the streamed download still stops
    content = resolver(bot, media_max_bytes=1000).resolve(
        message(
            "document_pdf",
            document={**telegram_update("document_pdf")["message"]["document"], "file_size": None},
        ),
        111111111,
    )
    assert "not downloaded" in content.saved_text


def test_unavailable_file_is_reported_without_logging_its_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot = FakeBot()
    bot.fail_with = TelegramError("getFile", 502, "Bad Gateway")
    with caplog.at_level(logging.INFO):
        content = resolver(bot).resolve(message("document_pdf"), 111111111)
    assert content.saved_text == (
        texts.render("media_unavailable", what='document "invoice.pdf"') + "\nsummarize this"
    )
    assert all("invoice" not in record.getMessage() for record in caplog.records)


# -- text, context, identity -------------------------------------------------------------------


def test_plain_private_text_needs_no_bot_call() -> None:
    bot = FakeBot()
    content = resolver(bot).resolve(message("text_private"), 111111111)
    assert content == UserContent("Hi! What can you do?", "Hi! What can you do?", ())
    assert bot.calls == []


def test_the_bots_mention_is_stripped_with_one_get_me() -> None:
    bot = FakeBot()
    content = resolver(bot).resolve(message("group_mention"), -1001234567890)
    assert content.model_content == "what's on the agenda?"
    assert bot.methods() == ["getMe"]


def test_reply_and_forward_context_come_first() -> None:
    bot = FakeBot()
    content = resolver(bot).resolve(message("reply_to_bot"), 111111111)
    assert content.model_content == (
        '[replying to your earlier message: "Shall I set a reminder for 9am?"]\nyes, do that'
    )
    forwarded = resolver(bot).resolve(message("forwarded"), 111111111)
    assert forwarded.model_content == "[forwarded from Bob]\nMeeting moved to 3pm"


def test_other_attachments_keep_their_notes() -> None:
    content = resolver(FakeBot()).resolve(message("location"), 111111111)
    assert isinstance(content.model_content, str)
    assert content.model_content.startswith("[location: ")


def test_group_uploads_go_under_the_group_chat() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("AgACAgQAAxkBAAIBPhotoLarge", JPEG, "photos/file_3.jpg")
    resolver(bot, workspace).resolve(message("photo_with_caption"), -1001234567890)
    assert list(workspace.files) == ["uploads/-1001234567890/2025-11/AQADs3.jpg"]


# -- the request -------------------------------------------------------------------------------


def test_content_parts_get_the_runtime_block_as_first_text_part() -> None:
    runtime = RuntimeContext(datetime(2030, 1, 1, tzinfo=UTC), "UTC", "telegram", "1")
    parts_in: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
        {"type": "text", "text": "[image] (saved at x)"},
    ]
    request = ContextBuilder().messages(MemoryWorkspace(), [], parts_in, runtime.render())
    assert request[-1] == {
        "role": "user",
        "content": [{"type": "text", "text": runtime.render()}, *parts_in],
    }
    text_request = ContextBuilder().messages(MemoryWorkspace(), [], "hi", runtime.render())
    assert text_request[-1]["content"] == f"{runtime.render()}\n\nhi"


# -- helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [(JPEG, "image/jpeg"), (PNG, "image/png"), (GIF, "image/gif"), (WEBP, "image/webp")],
)
def test_sniff_image(data: bytes, mime: str) -> None:
    assert sniff_image(data) == mime
    assert mime_type(data, "application/octet-stream") == mime


def test_non_images_are_no_images_but_still_recognised() -> None:
    assert sniff_image(PDF) is None
    assert sniff_image(b"RIFF\x00\x00\x00\x00WAVE") is None
    assert mime_type(PDF, "application/pdf") == "application/pdf"
    assert mime_type(PDF, None) == "application/pdf"  # more in test_media_sniffing.py


def test_looks_like_text() -> None:
    assert looks_like_text("héllo\n".encode())
    assert not looks_like_text(PDF)
    assert not looks_like_text(b"\xff\xfe bad utf-8")


def test_choose_photo() -> None:
    sizes = [
        PhotoSize(file_id="s", file_unique_id="s", width=90, height=67, file_size=1_000),
        PhotoSize(file_id="m", file_unique_id="m", width=320, height=240, file_size=20_000),
        PhotoSize(file_id="l", file_unique_id="l", width=1280, height=960, file_size=90_000),
    ]
    assert choose_photo(sizes, 100_000) == sizes[2]
    assert choose_photo(sizes, 50_000) == sizes[1]
    assert choose_photo(sizes, 500) is None
    unknown = [PhotoSize(file_id="u", file_unique_id="u", width=10, height=10)]
    assert choose_photo(unknown, 500) == unknown[0]


def test_transcriber_only_when_configured() -> None:
    base = dict(AGENT_ENV)
    assert transcriber_for(AgentSettings.model_validate(base)) is None
    configured = AgentSettings.model_validate({**base, "TRANSCRIPTION_MODEL": "whisper-1"})
    assert transcriber_for(configured) is not None


def transcriber_options(**env: str) -> dict[str, object]:
    base = {
        **AGENT_ENV,
        "LLM_MODEL": "anthropic/claude-sonnet-4-5",
        "LLM_API_KEY": "sk-ant-chat-key",
    }
    transcriber = transcriber_for(AgentSettings.model_validate({**base, **env}))
    assert isinstance(transcriber, LitellmTranscriber)
    return transcriber._options


def test_the_chat_key_is_never_sent_to_another_provider() -> None:
    options = transcriber_options(TRANSCRIPTION_MODEL="whisper-1")  # OpenAI, chat is Anthropic
    assert "api_key" not in options and "api_base" not in options


def test_a_dedicated_transcription_key_is_used() -> None:
    options = transcriber_options(
        TRANSCRIPTION_MODEL="groq/whisper-large-v3", TRANSCRIPTION_API_KEY="gsk-transcribe"
    )
    assert options["api_key"] == "gsk-transcribe"


def test_the_chat_key_is_reused_for_the_same_provider() -> None:
    options = transcriber_options(
        LLM_MODEL="openai/gpt-4o", LLM_API_KEY="sk-openai", TRANSCRIPTION_MODEL="whisper-1"
    )
    assert options["api_key"] == "sk-openai"
