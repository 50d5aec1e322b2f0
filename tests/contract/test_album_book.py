"""The AlbumBook port: DynamoAlbumBook on moto server and MemoryAlbumBook alike."""

from __future__ import annotations

import time

from nanobot_lambda.core.albums import AlbumRecord, album_key
from nanobot_lambda.core.ports import AlbumBook
from tests.conftest import album_updates

KEY = album_key("telegram:111111111", "13571113579")


def test_an_album_with_no_part_has_no_record(albums: AlbumBook) -> None:
    assert albums.get(KEY) is None


def test_parts_read_back_whole_with_when_the_latest_arrived(albums: AlbumBook) -> None:
    first, second = album_updates(2)
    before = int(time.time() * 1000)
    albums.add_part(KEY, first["update_id"], first)
    albums.add_part(KEY, second["update_id"], second)
    albums.add_part(KEY, second["update_id"], second)  # a re-sent update: harmless
    record = albums.get(KEY)
    assert record is not None
    assert record.parts == {first["update_id"]: first, second["update_id"]: second}
    assert before <= record.last_part_ms <= int(time.time() * 1000)
    assert (record.lead, record.claimed) == (None, frozenset())
    assert albums.get(album_key("telegram:222", "13571113579")) is None  # another chat's


def test_a_recorded_part_is_a_copy_of_the_update(albums: AlbumBook) -> None:
    (update,) = album_updates(1)
    albums.add_part(KEY, update["update_id"], update)
    update["message"]["caption"] = "changed after it was recorded"
    record = albums.get(KEY)
    assert record is not None
    assert record.parts[update["update_id"]]["message"]["caption"] != update["message"]["caption"]


def test_the_first_claim_holds_and_later_ones_get_it(albums: AlbumBook) -> None:
    first, second, third = album_updates(3)
    for update in (first, second):
        albums.add_part(KEY, update["update_id"], update)
    ids = frozenset({first["update_id"], second["update_id"]})
    claimed = albums.claim(KEY, first["update_id"], ids)
    assert (claimed.lead, claimed.claimed) == (first["update_id"], ids)
    assert set(claimed.parts) == ids
    # The same lead again (a retried turn) claims what it passes now.
    again = albums.claim(KEY, first["update_id"], ids | {third["update_id"]})
    assert (again.lead, again.claimed) == (first["update_id"], ids | {third["update_id"]})
    other = albums.claim(KEY, second["update_id"], frozenset({second["update_id"]}))
    assert (other.lead, other.claimed) == (again.lead, again.claimed)
    # A part recorded after the claim is kept; the claim stays as it was.
    albums.add_part(KEY, third["update_id"], third)
    record = albums.get(KEY)
    assert record is not None and (record.lead, record.claimed) == (again.lead, again.claimed)
    assert set(record.parts) == ids | {third["update_id"]}


def test_a_claim_before_any_part_was_recorded_is_a_record_of_its_own(albums: AlbumBook) -> None:
    """The webhook records parts on a best-effort basis: the lead's claim still holds."""
    claimed = albums.claim(KEY, 7, frozenset({7}))
    assert claimed == AlbumRecord(parts={}, last_part_ms=0, lead=7, claimed=frozenset({7}))
    assert albums.get(KEY) == claimed
