"""getMe, getFile and file downloads: the client against the local Bot API over HTTP.

The download URL holds the bot token: whatever fails, no error may carry it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import FileTooLarge, TelegramBot, TelegramError
from nanobot_lambda.operator.local.bot_api import BOT_USER, GET_FILE_MAX_BYTES, LocalBotApi

TOKEN = "123456:file-secret-token"
PHOTO = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 100


class FlakyDownloads(LocalBotApi):
    """The local Bot API, failing the next downloads with the given statuses."""

    def __init__(self) -> None:
        super().__init__(TOKEN)
        self.download_faults: deque[int] = deque()

    def download(self, path: str) -> tuple[int, bytes | dict[str, Any]]:
        if self.download_faults:
            status = self.download_faults.popleft()
            return status, {"ok": False, "error_code": status, "description": "Bad Gateway"}
        return super().download(path)


@pytest.fixture
def api() -> Iterator[FlakyDownloads]:
    server = FlakyDownloads().start()
    yield server
    server.stop()


def bot(api: LocalBotApi, sleeps: list[float] | None = None, token: str = TOKEN) -> TelegramBot:
    recorded = sleeps if sleeps is not None else []
    return TelegramBot(SecretStr(token), api.base_url, sleep=recorded.append)


def assert_no_secret(error: BaseException) -> None:
    shown = f"{error} {error!r} {error.__cause__!r} {error.__context__!r}"
    assert TOKEN not in shown
    assert "file-secret-token" not in shown
    assert "/file/bot" not in shown


def test_get_me_is_asked_once(api: FlakyDownloads) -> None:
    client = bot(api)
    first, second = client.get_me(), client.get_me()
    assert first is second
    assert (first.id, first.username, first.is_bot) == (
        BOT_USER["id"],
        BOT_USER["username"],
        True,
    )
    assert [method for method, _ in api.calls] == ["getMe"]


def test_get_file_then_download(api: FlakyDownloads) -> None:
    api.add_file("AgACPhoto", PHOTO, "photos/file_3.jpg", file_unique_id="AQADs3")
    client = bot(api)
    path, size = client.get_file("AgACPhoto")
    assert (path, size) == ("photos/file_3.jpg", len(PHOTO))
    assert client.download(path, max_bytes=len(PHOTO)) == PHOTO
    assert api.downloads == ["photos/file_3.jpg"]


def test_unknown_file_id_is_telegrams_400(api: FlakyDownloads) -> None:
    with pytest.raises(TelegramError) as error:
        bot(api).get_file("nope")
    assert error.value.status == 400
    assert error.value.description == "Bad Request: invalid file_id"
    assert not isinstance(error.value, FileTooLarge)


def test_files_over_20_mb_cannot_be_fetched(api: FlakyDownloads) -> None:
    api.add_file("huge", bytes(GET_FILE_MAX_BYTES + 1), "documents/huge.bin")
    with pytest.raises(FileTooLarge) as error:
        bot(api).get_file("huge")
    assert error.value.status == 400
    assert "file is too big" in error.value.description
    # Not even by guessing its path.
    with pytest.raises(TelegramError) as download:
        bot(api).download("documents/huge.bin", max_bytes=GET_FILE_MAX_BYTES * 2)
    assert download.value.status == 404
    assert_no_secret(download.value)


def test_download_stops_at_max_bytes(api: FlakyDownloads) -> None:
    api.add_file("big", PHOTO, "photos/big.jpg")
    with pytest.raises(FileTooLarge) as error:
        bot(api).download("photos/big.jpg", max_bytes=1000)
    assert error.value.method == "download"
    assert "1000 bytes" in str(error.value)
    assert_no_secret(error.value)


def test_download_of_an_unknown_path_hides_the_url(api: FlakyDownloads) -> None:
    with pytest.raises(TelegramError) as error:
        bot(api).download("photos/missing.jpg", max_bytes=1000)
    assert error.value.status == 404
    assert "photos/missing.jpg" not in str(error.value)
    assert_no_secret(error.value)


def test_download_with_a_wrong_token_is_refused(api: FlakyDownloads) -> None:
    api.add_file("f", PHOTO, "photos/f.jpg")
    with pytest.raises(TelegramError) as error:
        bot(api, token="999:wrong-token").download("photos/f.jpg", max_bytes=len(PHOTO))
    assert error.value.status == 401
    assert "wrong-token" not in f"{error.value!r}"


def test_download_retries_5xx(api: FlakyDownloads) -> None:
    api.add_file("f", PHOTO, "photos/f.jpg")
    api.download_faults.extend([502, 500])
    sleeps: list[float] = []
    assert bot(api, sleeps).download("photos/f.jpg", max_bytes=len(PHOTO)) == PHOTO
    assert sleeps == [0.5, 1.0]


def test_download_gives_up_after_the_attempts(api: FlakyDownloads) -> None:
    api.add_file("f", PHOTO, "photos/f.jpg")
    api.download_faults.extend([502] * 4)
    with pytest.raises(TelegramError) as error:
        bot(api).download("photos/f.jpg", max_bytes=len(PHOTO))
    assert error.value.status == 502
    assert_no_secret(error.value)


def test_download_network_failure_hides_the_url() -> None:
    unreachable = TelegramBot(SecretStr(TOKEN), "http://127.0.0.1:9", sleep=lambda _: None)
    with pytest.raises(TelegramError) as error:
        unreachable.download("photos/f.jpg", max_bytes=100)
    assert error.value.status is None
    assert "127.0.0.1" not in str(error.value)
    assert_no_secret(error.value)


def test_file_paths_are_quoted(api: FlakyDownloads) -> None:
    api.add_file("odd", b"data", "documents/my file #1.txt")
    client = bot(api)
    path, _ = client.get_file("odd")
    assert client.download(path, max_bytes=10) == b"data"


class EndlessFile(BaseHTTPRequestHandler):
    """A download server that sends no Content-Length and would send 50 MB: only reading can
    stop it. Counts what it managed to write before the client hung up."""

    protocol_version = "HTTP/1.0"  # the body ends when the connection closes
    written = 0

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        chunk = bytes(64 * 1024)
        try:
            for _ in range(50 * 16):
                self.wfile.write(chunk)
                type(self).written += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            return

    def log_message(self, *args: object) -> None:
        return


def test_a_download_without_a_size_is_cut_at_max_bytes_while_it_is_read() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EndlessFile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = TelegramBot(SecretStr(TOKEN), f"http://127.0.0.1:{server.server_port}")
        with pytest.raises(FileTooLarge) as error:
            client.download("documents/endless.bin", max_bytes=1_000_000)
    finally:
        server.shutdown()
        server.server_close()
    assert "1000000 bytes" in str(error.value)
    assert_no_secret(error.value)
    # The client hung up soon after the limit: far from the 50 MB on offer (the rest of what
    # was written sat in the sockets' buffers).
    assert EndlessFile.written < 16_000_000
