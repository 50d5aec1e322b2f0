"""The local Bot API's file-sending methods (sendPhoto, sendDocument, sendAudio, sendVoice),
uploaded as multipart/form-data over real HTTP, accepted and refused as Telegram does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from nanobot_lambda.operator.local.bot_api import (
    PHOTO_MAX_BYTES,
    UPLOAD_MAX_BYTES,
    LocalBotApi,
    SentFile,
)

TOKEN = "8282:files-token"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
GIF = b"GIF89a" + b"\x00" * 64
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 64


@pytest.fixture
def received() -> list[SentFile]:
    return []


@pytest.fixture
def api(received: list[SentFile]) -> Iterator[LocalBotApi]:
    server = LocalBotApi(TOKEN, on_file=received.append).start()
    yield server
    server.stop()


def upload(
    api: LocalBotApi,
    method: str,
    field: str,
    filename: str,
    data: bytes,
    *,
    token: str = TOKEN,
    **fields: Any,
) -> requests.Response:
    form = {"chat_id": 42, **fields}
    return requests.post(
        f"{api.base_url}/bot{token}/{method}",
        data={name: str(value) for name, value in form.items() if value is not None},
        files={field: (filename, data)},
        timeout=30,
    )


def refused(response: requests.Response) -> tuple[int, int, str]:
    body = response.json()
    assert body["ok"] is False
    return response.status_code, body["error_code"], body["description"]


@pytest.mark.parametrize(
    ("method", "field", "filename", "data", "mime_type"),
    [
        ("sendPhoto", "photo", "plot.png", PNG, None),
        ("sendDocument", "document", "report.pdf", b"%PDF-1.7 report", "application/pdf"),
        ("sendAudio", "audio", "song.mp3", b"ID3 song", "audio/mpeg"),
        ("sendVoice", "voice", "note.ogg", b"OggS voice", "audio/ogg"),
    ],
)
def test_each_method_records_the_file_and_answers_a_message(
    api: LocalBotApi,
    received: list[SentFile],
    method: str,
    field: str,
    filename: str,
    data: bytes,
    mime_type: str | None,
) -> None:
    response = upload(api, method, field, filename, data, caption="Here it is", message_thread_id=9)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is True
    message = body["result"]
    (sent,) = api.files_sent
    assert received == [sent]
    assert (sent.chat_id, sent.thread_id, sent.method, sent.field) == (42, 9, method, field)
    assert (sent.filename, sent.data, sent.caption) == (filename, data, "Here it is")
    assert sent.plain_caption == "Here it is"
    assert sent.message_id == message["message_id"]
    assert message["chat"] == {"id": 42, "type": "private"}
    assert message["caption"] == "Here it is"
    assert message["message_thread_id"] == 9
    assert isinstance(message["date"], int)
    media = message[field]
    if field == "photo":
        (size,) = media
        assert size == {
            "file_id": sent.file_id,
            "file_unique_id": size["file_unique_id"],
            "file_size": len(data),
            "width": 1,
            "height": 1,
        }
    else:
        assert media["file_id"] == sent.file_id
        assert media["file_size"] == len(data)
        assert media.get("file_name") == (None if field == "voice" else filename)
        assert media.get("mime_type") == mime_type
        assert ("duration" in media) == (field != "document")
    assert [called for called, _ in api.calls] == [method]
    assert [called for _, called, _ in api.timeline] == [method]


def test_a_file_shares_the_message_ids_and_can_be_fetched_back(api: LocalBotApi) -> None:
    status, sent_text = api.perform("sendMessage", {"chat_id": 42, "text": "a plot:"})
    assert status == 200
    message = upload(api, "sendPhoto", "photo", "plot.png", PNG).json()["result"]
    again = upload(api, "sendPhoto", "photo", "copy.png", PNG).json()["result"]

    assert message["message_id"] == sent_text["result"]["message_id"] + 1
    assert again["message_id"] == message["message_id"] + 1
    # The same bytes are the same file to Telegram: one file_unique_id, distinct file_ids.
    assert again["photo"][0]["file_unique_id"] == message["photo"][0]["file_unique_id"]
    assert again["photo"][0]["file_id"] != message["photo"][0]["file_id"]
    file = requests.get(
        f"{api.base_url}/bot{TOKEN}/getFile",
        params={"file_id": message["photo"][0]["file_id"]},
        timeout=5,
    ).json()["result"]
    assert file["file_path"].startswith("photos/") and file["file_size"] == len(PNG)
    download = requests.get(f"{api.base_url}/file/bot{TOKEN}/{file['file_path']}", timeout=5)
    assert download.content == PNG


def test_no_caption_no_thread(api: LocalBotApi) -> None:
    message = upload(api, "sendDocument", "document", "notes.txt", b"hello").json()["result"]

    assert "caption" not in message and "message_thread_id" not in message
    (sent,) = api.files_sent
    assert (sent.caption, sent.plain_caption, sent.thread_id) == (None, None, None)


def test_an_html_caption_is_checked_and_shown_as_read(api: LocalBotApi) -> None:
    good = upload(
        api, "sendPhoto", "photo", "a.png", PNG, caption="<b>Sales</b> up", parse_mode="HTML"
    )
    bad = upload(api, "sendPhoto", "photo", "a.png", PNG, caption="<b>Sales", parse_mode="HTML")

    assert good.json()["result"]["caption"] == "Sales up"
    (sent,) = api.files_sent
    assert (sent.caption, sent.plain_caption) == ("<b>Sales</b> up", "Sales up")
    status, code, description = refused(bad)
    assert (status, code) == (400, 400)
    assert description.startswith("Bad Request: can't parse entities")


@pytest.mark.parametrize("image", [PNG, JPEG, GIF, WEBP], ids=["png", "jpeg", "gif", "webp"])
def test_photos_of_each_image_format_are_accepted(api: LocalBotApi, image: bytes) -> None:
    assert upload(api, "sendPhoto", "photo", "image", image).status_code == 200


def test_a_photo_that_is_not_an_image_is_refused(api: LocalBotApi) -> None:
    response = upload(api, "sendPhoto", "photo", "plot.png", b"%PDF-1.7 not an image")

    assert refused(response) == (400, 400, "Bad Request: IMAGE_PROCESS_FAILED")
    assert api.files_sent == []


def test_a_photo_over_10_mb_is_refused_but_a_document_of_that_size_is_not(
    api: LocalBotApi,
) -> None:
    big = PNG + b"\x00" * (PHOTO_MAX_BYTES + 1 - len(PNG))

    photo = upload(api, "sendPhoto", "photo", "big.png", big)
    document = upload(api, "sendDocument", "document", "big.png", big)

    assert refused(photo) == (400, 400, "Bad Request: photo is too big (at most 10 MB)")
    assert document.status_code == 200
    assert [sent.method for sent in api.files_sent] == ["sendDocument"]


def test_an_upload_over_50_mb_is_too_large(api: LocalBotApi) -> None:
    response = upload(api, "sendDocument", "document", "huge.bin", bytes(UPLOAD_MAX_BYTES + 1))

    assert refused(response) == (413, 413, "Request Entity Too Large")
    assert api.files_sent == []


def test_a_caption_over_1024_characters_is_too_long(api: LocalBotApi) -> None:
    longest = upload(api, "sendVoice", "voice", "v.ogg", b"OggS", caption="x" * 1024)
    too_long = upload(api, "sendVoice", "voice", "v.ogg", b"OggS", caption="x" * 1023 + "😀")

    assert longest.status_code == 200
    # Telegram counts UTF-16 code units: the emoji makes it 1025.
    assert refused(too_long) == (400, 400, "Bad Request: message caption is too long")
    assert len(api.files_sent) == 1


@pytest.mark.parametrize(
    ("method", "field"),
    [
        ("sendPhoto", "photo"),
        ("sendDocument", "document"),
        ("sendAudio", "audio"),
        ("sendVoice", "voice"),
    ],
)
def test_a_missing_chat_or_file_is_refused(api: LocalBotApi, method: str, field: str) -> None:
    no_chat = upload(api, method, field, "f.png", PNG, chat_id=None)
    wrong_part = upload(api, method, "file", "f.png", PNG)  # not the method's field
    no_file = requests.post(f"{api.base_url}/bot{TOKEN}/{method}", data={"chat_id": 42}, timeout=5)

    assert refused(no_chat) == (400, 400, "Bad Request: chat_id is empty")
    for response in (wrong_part, no_file):
        assert refused(response) == (400, 400, f"Bad Request: there is no {field} in the request")
    assert api.files_sent == []


def test_a_wrong_token_is_unauthorized(api: LocalBotApi, received: list[SentFile]) -> None:
    response = upload(api, "sendPhoto", "photo", "plot.png", PNG, token="8282:wrong")

    assert refused(response) == (401, 401, "Unauthorized")
    assert api.files_sent == [] and received == [] and api.calls == []
