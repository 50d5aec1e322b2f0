"""Which updates a part of an album answers (core/albums.py), on an in-memory album book and a
clock the test moves: the lead waits for the album to be quiet, claims what arrived, and
every other part's turn skips or answers alone; nothing is lost or answered twice."""

from __future__ import annotations

from typing import Any

from nanobot_lambda.core.albums import Albums, AlbumWait, album_key
from tests.support.fakes import MemoryAlbumBook

KEY = album_key("telegram:42", "13571113")
WAIT = AlbumWait(quiet_ms=1500, max_ms=8000, poll_ms=300)


class Clock:
    """Milliseconds that pass only when someone sleeps; `arrivals` are parts recorded by
    the webhook at given times while the lead sleeps."""

    def __init__(self, book: MemoryAlbumBook) -> None:
        self.now = 0
        self.book = book
        self.arrivals: list[tuple[int, int]] = []  # (at ms, update id)
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += round(seconds * 1000)
        for at, update_id in list(self.arrivals):
            if at <= self.now:
                self.arrivals.remove((at, update_id))
                self.book.add_part(KEY, update_id, part(update_id))


def part(update_id: int) -> dict[str, Any]:
    return {"update_id": update_id, "message": {"message_id": update_id, "media_group_id": "1"}}


def setup() -> tuple[MemoryAlbumBook, Clock, Albums]:
    book = MemoryAlbumBook()
    clock = Clock(book)
    book.now_ms = lambda: clock.now
    return book, clock, Albums(book, WAIT, now_ms=lambda: clock.now, sleep=clock.sleep)


def ids(updates: list[Any]) -> list[int]:
    return [update["update_id"] for update in updates]


def test_the_lead_waits_until_no_part_came_for_a_while_and_answers_all_in_order() -> None:
    book, clock, albums = setup()
    for update_id in (11, 12):
        book.add_part(KEY, update_id, part(update_id))
    clock.arrivals = [(600, 14), (900, 13)]  # later parts, out of order
    assert ids(albums.to_answer(KEY, 11, part(11))) == [11, 12, 13, 14]
    assert clock.now >= 900 + WAIT.quiet_ms  # quiet since the last part
    assert clock.now < 900 + WAIT.quiet_ms + WAIT.poll_ms
    # The other parts' own turns: answered with the album, so skipped.
    for update_id in (12, 13, 14):
        assert albums.to_answer(KEY, update_id, part(update_id)) == []


def test_a_lead_whose_album_is_already_quiet_does_not_wait() -> None:
    book, clock, albums = setup()
    book.add_part(KEY, 11, part(11))
    book.add_part(KEY, 12, part(12))
    clock.now = 5000
    assert ids(albums.to_answer(KEY, 11, part(11))) == [11, 12]
    assert clock.slept == []


def test_a_part_recorded_after_the_claim_is_answered_on_its_own() -> None:
    book, _, albums = setup()
    book.add_part(KEY, 11, part(11))
    assert ids(albums.to_answer(KEY, 11, part(11))) == [11]
    book.add_part(KEY, 12, part(12))  # too late for the album's turn
    assert ids(albums.to_answer(KEY, 12, part(12))) == [12]


def test_a_part_never_recorded_is_answered_on_its_own() -> None:
    _, _, albums = setup()
    assert ids(albums.to_answer(KEY, 11, part(11))) == [11]


def test_the_lead_answers_itself_even_when_its_own_part_was_not_recorded() -> None:
    book, clock, albums = setup()
    book.add_part(KEY, 12, part(12))
    clock.now = 5000
    assert ids(albums.to_answer(KEY, 11, part(11))) == [11, 12]
    assert albums.to_answer(KEY, 12, part(12)) == []


def test_a_retried_lead_answers_the_same_parts_without_waiting_again() -> None:
    book, clock, albums = setup()
    book.add_part(KEY, 11, part(11))
    book.add_part(KEY, 12, part(12))
    first = albums.to_answer(KEY, 11, part(11))
    slept = len(clock.slept)
    book.add_part(KEY, 13, part(13))  # arrived after the claim
    assert albums.to_answer(KEY, 11, part(11)) == first
    assert len(clock.slept) == slept
    assert len(book.claims) == 1
    assert ids(albums.to_answer(KEY, 13, part(13))) == [13]


def test_parts_that_keep_coming_stop_the_wait_at_its_limit() -> None:
    book, clock, albums = setup()
    book.add_part(KEY, 1, part(1))
    clock.arrivals = [(at, 1 + at // 1000) for at in range(1000, 20_000, 1000)]
    answered = ids(albums.to_answer(KEY, 1, part(1)))
    assert WAIT.max_ms <= clock.now < WAIT.max_ms + WAIT.poll_ms
    assert answered == list(range(1, 2 + clock.now // 1000))
    late = max(answered) + 1
    book.add_part(KEY, late, part(late))
    assert ids(albums.to_answer(KEY, late, part(late))) == [late]


def test_a_claim_made_by_another_turn_first_wins() -> None:
    book, clock, albums = setup()
    for update_id in (11, 12):
        book.add_part(KEY, update_id, part(update_id))
    clock.now = 5000
    # Another turn claims while this one is deciding (not possible within one FIFO group,
    # but the book must still give one answer).
    book.claim(KEY, 12, frozenset({11, 12}))
    assert albums.to_answer(KEY, 11, part(11)) == []
    assert ids(albums.to_answer(KEY, 12, part(12))) == [11, 12]


def test_album_keys_are_per_conversation() -> None:
    assert album_key("telegram:1", "77") != album_key("telegram:2", "77")
    assert album_key("telegram:1:5", "77") == "telegram:1:5:77"
