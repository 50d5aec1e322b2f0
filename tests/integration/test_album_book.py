"""Album parts in the sessions table (moto server): recorded by concurrent deliveries without
losing one, with their expiry; and out of the way of sessions and their listing. What every
AlbumBook does (read back whole, claimed once): tests/contract/test_album_book.py."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import boto3

from nanobot_lambda.adapters.aws.albums import ALBUM_RECORD_SECONDS, DynamoAlbumBook
from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core.albums import album_key
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.ops.session_admin import SessionAdmin
from tests.conftest import album_updates

KEY = album_key("telegram:111111111", "13571113579")


def test_parts_recorded_at_once_are_all_kept_with_their_arrival(
    resources: TemplateContext,
) -> None:
    book = DynamoAlbumBook(resources.refs["SessionsTable"], dynamodb_client)
    parts = album_updates(10)  # Telegram's largest album
    before = int(time.time() * 1000)
    with ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(lambda update: book.add_part(KEY, update["update_id"], update), parts))
    record = book.get(KEY)
    assert record is not None
    assert record.parts == {update["update_id"]: update for update in parts}
    assert before <= record.last_part_ms <= int(time.time() * 1000)
    assert record.lead is None and record.claimed == frozenset()
    item = boto3.client("dynamodb").get_item(
        TableName=resources.refs["SessionsTable"],
        Key={"pk": {"S": f"album#{KEY}"}, "sk": {"S": "parts"}},
    )["Item"]
    expires = int(item["expires_at"]["N"])
    assert abs(expires - (record.last_part_ms // 1000 + ALBUM_RECORD_SECONDS)) <= 1


def test_albums_are_neither_sessions_nor_in_the_way_of_one(resources: TemplateContext) -> None:
    table = resources.refs["SessionsTable"]
    store = DynamoSessionStore(table, dynamodb_client())
    history = store.load("telegram:111111111", 10)
    store.append(history, [{"role": "user", "content": "hi"}])
    (update,) = album_updates(1)
    DynamoAlbumBook(table, dynamodb_client).add_part(KEY, update["update_id"], update)
    assert store.load("telegram:111111111", 10).messages == [{"role": "user", "content": "hi"}]
    sessions = SessionAdmin(table, boto3.client("dynamodb")).sessions()
    assert [session.key for session in sessions] == ["telegram:111111111"]
