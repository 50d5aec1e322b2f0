"""MIME types are sniffed, not trusted: a declared type is only a claim. And files too large to
fetch are refused with a notice the user gets straight away."""

from __future__ import annotations

import io
import zipfile

import pytest

from nanobot_lambda.adapters.telegram.client import FileTooLarge
from nanobot_lambda.adapters.telegram.media import UserContent, human_size, mime_type, sniff
from nanobot_lambda.core import texts
from tests.support.fakes import MemoryWorkspace
from tests.support.hostile_names import HOSTILE_NAMES, seen
from tests.unit.test_media import (
    GIF,
    JPEG,
    MONTH,
    PDF,
    PNG,
    WEBP,
    FakeBot,
    FakeTranscriber,
    message,
    resolver,
)


def zipped(*names: str, first: tuple[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if first is not None:  # ODF/EPUB: an uncompressed `mimetype` member comes first
            archive.writestr(zipfile.ZipInfo(first[0]), first[1])
        for name in names:
            archive.writestr(name, "<x/>")
    return buffer.getvalue()


DOCX = zipped("[Content_Types].xml", "word/document.xml")
XLSX = zipped("[Content_Types].xml", "xl/workbook.xml")
PPTX = zipped("[Content_Types].xml", "ppt/presentation.xml")
ODT = zipped("content.xml", first=("mimetype", "application/vnd.oasis.opendocument.text"))
EPUB = zipped("META-INF/container.xml", first=("mimetype", "application/epub+zip"))
ZIP = zipped("notes.txt")
OGG = b"OggS\x00\x02" + bytes(64)
MP3_ID3 = b"ID3\x04\x00\x00" + bytes(64)
MP3_FRAME = b"\xff\xfb\x90\x64" + bytes(64)
M4A = b"\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00" + bytes(64)
MP4 = b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00" + bytes(64)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(64)
FLAC = b"fLaC\x00\x00\x00\x22" + bytes(64)
WEBM = b"\x1aE\xdf\xa3" + bytes(64)
OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (JPEG, "image/jpeg"),
        (PNG, "image/png"),
        (GIF, "image/gif"),
        (WEBP, "image/webp"),
        (PDF, "application/pdf"),
        (DOCX, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        (XLSX, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        (PPTX, "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
        (ODT, "application/vnd.oasis.opendocument.text"),
        (EPUB, "application/epub+zip"),
        (ZIP, "application/zip"),
        (OLE, "application/x-ole-storage"),
        (OGG, "audio/ogg"),
        (MP3_ID3, "audio/mpeg"),
        (MP3_FRAME, "audio/mpeg"),
        (M4A, "audio/mp4"),
        (MP4, "video/mp4"),
        (WAV, "audio/wav"),
        (FLAC, "audio/flac"),
        (WEBM, "video/webm"),
        (b"plain text", None),
        (b"", None),
        (b"\xff\xf1\x50\x80", None),  # AAC (ADTS): layer bits 00, not MPEG audio
    ],
)
def test_sniff(data: bytes, expected: str | None) -> None:
    assert sniff(data) == expected


@pytest.mark.parametrize(
    ("data", "declared", "expected"),
    [
        # The bytes win over a contradicting claim...
        (PDF, "image/jpeg", "application/pdf"),
        (JPEG, "application/pdf", "image/jpeg"),
        (PNG, "audio/ogg", "image/png"),
        (OGG, "audio/mpeg", "audio/ogg"),
        (DOCX, "application/pdf", sniff(DOCX)),
        (PDF, "text/plain", "application/pdf"),
        # ...a claim naming the same container more precisely is kept...
        (MP4, "audio/mp4", "audio/mp4"),
        (OGG, "audio/opus", "audio/opus"),
        (ZIP, "application/java-archive", "application/java-archive"),
        (OLE, "application/msword", "application/msword"),
        (PDF, "application/pdf; charset=binary", "application/pdf"),
        # ...text is text, whatever it claims to be...
        (b"name,age\nada,36\n", "text/csv", "text/csv"),
        (b"just text pretending", "image/jpeg", "text/plain"),
        (b'{"a": 1}', "application/json", "application/json"),
        (b"text", "application/pdf", "text/plain"),
        # ...a binary claim we can check but that does not hold is dropped...
        (bytes(range(256)), "image/png", "application/octet-stream"),
        (bytes(range(256)), "application/pdf", "application/octet-stream"),
        (bytes(range(256)), "text/plain", "application/octet-stream"),
        # ...and one we have no magic number for stands, for lack of better.
        (bytes(range(256)), "application/x-7z-compressed", "application/x-7z-compressed"),
        (bytes(range(256)), None, "application/octet-stream"),
    ],
)
def test_a_declared_type_is_only_a_claim(data: bytes, declared: str | None, expected: str) -> None:
    assert mime_type(data, declared) == expected


def test_a_document_whose_name_and_type_lie_is_stored_and_described_as_what_it_is() -> None:
    bot, workspace = FakeBot(), MemoryWorkspace()
    bot.add("lie", PDF, "documents/file_9.jpg")
    document = {
        "file_id": "lie",
        "file_unique_id": "AgADl1",
        "file_name": "holiday.jpg",
        "mime_type": "image/jpeg",
    }
    content = resolver(bot, workspace).resolve(message("document_pdf", document=document), 1)
    assert isinstance(content.model_content, str)  # not shown to the model as an image
    assert "(application/pdf," in content.saved_text
    # Stored as the PDF it is, its text beside it (a PDF's text is read).
    assert list(workspace.files) == [
        "uploads/1/2025-11/AgADl1.pdf",
        "uploads/1/2025-11/AgADl1.pdf.txt",
    ]


def test_an_image_declared_as_something_else_is_shown_as_the_image_it_is() -> None:
    bot = FakeBot()
    bot.add("png", PNG, "documents/file_10.bin")
    document = {
        "file_id": "png",
        "file_unique_id": "AgADp2",
        "file_name": "report.pdf",
        "mime_type": "application/pdf",
    }
    content = resolver(bot).resolve(message("document_pdf", document=document), 111111111)
    assert isinstance(content.model_content, list)
    assert f"{MONTH}/AgADp2.png" in content.saved_text


def test_audio_that_is_no_audio_is_not_sent_for_transcription() -> None:
    bot, transcriber = FakeBot(), FakeTranscriber(text="should not be asked")
    bot.add("AwACAgQAAxkBAAIBVoice", PDF, "voice/file_9.oga")
    content = resolver(bot, transcriber=transcriber).resolve(message("voice"), 111111111)
    assert transcriber.calls == []
    assert "could not be transcribed" in content.saved_text
    assert f"{MONTH}/AgADv1.pdf" in content.saved_text


def test_a_voice_note_is_transcribed_under_its_real_format() -> None:
    bot, transcriber = FakeBot(), FakeTranscriber(text="hello")
    bot.add("AwACAgQAAxkBAAIBVoice", MP3_ID3, "voice/file_9.oga")
    resolver(bot, transcriber=transcriber).resolve(message("voice"), 111111111)
    assert [name for name, _ in transcriber.calls] == ["voice.mp3"]


# -- files too large: the user is told at once -----------------------------------------------


def notice(what: str, limit: str) -> str:
    return texts.render("media_too_large_notice", what=what, limit=limit)


def notices_seen(content: UserContent) -> tuple[str, ...]:
    """The notices as the user reads them."""
    return tuple(seen(notice).text for notice in content.notices)


def test_a_file_declared_over_the_cap_is_refused_with_a_notice_and_not_fetched() -> None:
    bot = FakeBot()
    content = resolver(bot, media_max_bytes=10_000).resolve(message("document_pdf"), 1)
    assert bot.calls == []
    assert notices_seen(content) == (notice('document "invoice.pdf"', "10.0 KB"),)
    assert "user has already been told" in content.saved_text


@pytest.mark.parametrize("how", ["getFile size", "Telegram refuses", "download grows"])
def test_every_way_of_being_too_large_ends_in_the_same_notice(how: str) -> None:
    bot = FakeBot()
    document = {"file_id": "f", "file_unique_id": "u", "file_name": "big.pdf"}  # no size
    bot.add("f", PDF + bytes(20_000), "documents/big.pdf")
    if how == "Telegram refuses":
        bot.fail_with = FileTooLarge("getFile", 400, "Bad Request: file is too big")
    if how == "download grows":
        bot.report_size = 10
    limit = 20_000_000 if how == "Telegram refuses" else 1_000
    content = resolver(bot, media_max_bytes=limit).resolve(
        message("document_pdf", document=document), 1
    )
    assert notices_seen(content) == (notice('document "big.pdf"', human_size(limit)),)
    assert content.stored == ()


def test_a_photo_with_every_size_over_the_cap_gets_a_notice() -> None:
    content = resolver(FakeBot(), media_max_bytes=1000).resolve(message("photo_with_caption"), 1)
    assert notices_seen(content) == (notice("photo", "1.0 KB"),)


@pytest.mark.parametrize(("name", "shown"), HOSTILE_NAMES)
def test_a_file_name_in_a_notice_is_shown_as_text(name: str, shown: str) -> None:
    """The sender chose the name (in a group, not the only one told): no link, no mention, no
    markup in the notice; the model's note has the name as it is."""
    for kind in ("document", "audio"):
        file = {"file_id": "f", "file_unique_id": "u", "file_name": name, "file_size": 50_000}
        content = resolver(FakeBot(), media_max_bytes=10_000).resolve(
            message("document_pdf", **{"document": None, kind: file}), 1
        )
        assert notices_seen(content) == (notice(f'{kind} "{shown}"', "10.0 KB"),)
        assert seen(content.notices[0]).entities == []
        assert f'[{kind} "{name}" not downloaded' in content.saved_text


def test_files_that_fit_get_no_notice() -> None:
    bot = FakeBot()
    bot.add("BQACAgQAAxkBAAIBDoc", PDF, "documents/file_5.pdf")
    assert resolver(bot).resolve(message("document_pdf"), 1).notices == ()
