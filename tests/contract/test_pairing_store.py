"""The PairingStore port: DynamoPairingStore on moto server and MemoryPairingStore alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nanobot_lambda.core.pairing import Asker, AskRecord, PairingCode, Person
from nanobot_lambda.core.ports import PairingStore

AT = datetime(2026, 11, 26, 9, 30, 15, tzinfo=UTC)
CAROL = Asker(222222222, "Carol 🌷", "carol")
DAVE = Asker(1000000003, "Dave", None)  # no username; an id longer than Carol's


def code(
    number: str, asker: Asker = CAROL, expires: datetime = AT + timedelta(hours=1)
) -> PairingCode:
    return PairingCode(number, asker, expires)


def test_a_stranger_has_no_record(pairing: PairingStore) -> None:
    assert pairing.person(CAROL.user_id) is None
    assert pairing.ask_record(CAROL.user_id) is None
    assert pairing.code("123456") is None
    assert (pairing.people(), pairing.open_codes()) == ([], [])


def test_an_open_code_and_the_ask_read_back(pairing: PairingStore) -> None:
    assert pairing.open_code(code("123456"), "2026-11-26", 2)
    assert pairing.code("123456") == code("123456")
    assert pairing.open_codes() == [code("123456")]
    assert pairing.ask_record(CAROL.user_id) == AskRecord(
        "123456", AT + timedelta(hours=1), "2026-11-26", 2
    )


def test_times_are_kept_to_the_second_in_utc(pairing: PairingStore) -> None:
    """DynamoDB keeps epoch seconds: what is read back is the same instant, in UTC, without
    its microseconds, whatever zone it was given in."""
    given = datetime(2026, 11, 26, 11, 30, 15, 999_999).astimezone()  # the machine's zone
    pairing.open_code(code("123456", expires=given), "2026-11-26", 1)
    expected = given.replace(microsecond=0).astimezone(UTC)
    stored = pairing.code("123456")
    assert stored is not None and stored.expires == expected
    assert stored.expires.tzinfo == UTC
    assert pairing.approve(code("123456", expires=given), given)
    assert pairing.person(CAROL.user_id) == Person(CAROL, expected)


def test_a_code_open_for_someone_else_is_refused_and_changes_nothing(
    pairing: PairingStore,
) -> None:
    assert pairing.open_code(code("123456"), "2026-11-26", 1)
    assert not pairing.open_code(code("123456", DAVE), "2026-11-26", 1)
    assert pairing.code("123456") == code("123456")
    assert pairing.ask_record(DAVE.user_id) is None


def test_approving_closes_the_code_once(pairing: PairingStore) -> None:
    pairing.open_code(code("123456"), "2026-11-26", 1)
    assert pairing.approve(code("123456"), AT)
    assert pairing.person(CAROL.user_id) == Person(CAROL, AT)
    assert (pairing.code("123456"), pairing.ask_record(CAROL.user_id)) == (None, None)
    assert not pairing.approve(code("123456"), AT)  # used already
    assert not pairing.deny(code("123456"), AT)


def test_denying_closes_the_code_and_refuses_the_person_until_then(
    pairing: PairingStore,
) -> None:
    pairing.open_code(code("123456"), "2026-11-26", 1)
    until = AT + timedelta(days=1)
    assert pairing.deny(code("123456"), until)
    assert pairing.code("123456") is None and pairing.person(CAROL.user_id) is None
    assert pairing.ask_record(CAROL.user_id) == AskRecord(
        None, datetime.fromtimestamp(0, UTC), "", 0, denied_until=until
    )


def test_people_and_open_codes_in_the_store_s_key_order(pairing: PairingStore) -> None:
    """DynamoDB returns the partition's items by sort key: user ids and codes as text."""
    for number, asker in (("654321", DAVE), ("123456", CAROL)):
        pairing.open_code(code(number, asker), "2026-11-26", 1)
    assert [each.code for each in pairing.open_codes()] == ["123456", "654321"]
    for number, asker in (("123456", CAROL), ("654321", DAVE)):
        pairing.approve(code(number, asker), AT)
    # "1000000003" sorts before "222222222".
    assert pairing.people() == [Person(DAVE, AT), Person(CAROL, AT)]


def test_remove_takes_an_approval_back_once(pairing: PairingStore) -> None:
    pairing.open_code(code("123456"), "2026-11-26", 1)
    pairing.approve(code("123456"), AT)
    assert pairing.remove(CAROL.user_id)
    assert not pairing.remove(CAROL.user_id)
    assert pairing.person(CAROL.user_id) is None and pairing.people() == []


def test_hour_slots_stop_at_the_limit(pairing: PairingStore) -> None:
    assert [pairing.take_hour_slot("2026-11-26T09", 2) for _ in range(3)] == [True, True, False]
    assert pairing.take_hour_slot("2026-11-26T10", 2)  # a new hour
