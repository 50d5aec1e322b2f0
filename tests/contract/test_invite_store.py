"""The InviteStore port: DynamoInviteStore on moto server and MemoryInviteStore alike, each
admitting into its PairingStore's people."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from nanobot_lambda.core.invites import Invite, InviteStore, digest_of
from nanobot_lambda.core.pairing import Asker, Person
from nanobot_lambda.core.ports import PairingStore

AT = datetime(2026, 11, 29, 9, 30, 15, 250_000, tzinfo=UTC)  # stored to the second
CAROL = Asker(222222222, "Carol 🌷", "carol")
FAMILY = Asker(-1001234567890, "The Family")
Stores = tuple[InviteStore, PairingStore]


def invite(token: str, uses: int = 2, days: int = 7) -> Invite:
    return Invite(digest_of(token), AT + timedelta(days=days), uses, AT)


def whole(at: datetime) -> datetime:
    return at.replace(microsecond=0)


def test_invites_read_back_in_digest_order_to_the_second(invites: Stores) -> None:
    store, _ = invites
    assert store.invites() == []
    first, second = (
        invite("token-one-of-the-right-shape-0000"),
        invite("token-two-of-the-shape-0000", 5),
    )
    store.make_invite(first)
    store.make_invite(second)
    expected = sorted(
        (
            Invite(made.digest, whole(made.expires), made.max_uses, whole(made.made_at))
            for made in (first, second)
        ),
        key=lambda made: made.digest,
    )
    assert store.invites() == expected


def test_a_use_counts_once_and_approves_its_person_or_group(invites: Stores) -> None:
    store, people = invites
    made = invite("token-one-of-the-right-shape-0000", uses=2)
    store.make_invite(made)
    assert store.use_invite(made.digest, CAROL, AT)
    assert not store.use_invite(made.digest, CAROL, AT)  # admitted already: no use
    assert store.use_invite(made.digest, FAMILY, AT)
    assert not store.use_invite(made.digest, Asker(333333333, "Dan"), AT)  # none left
    assert people.person(CAROL.user_id) == Person(CAROL, whole(AT))
    assert people.person(FAMILY.user_id) == Person(FAMILY, whole(AT))
    assert [stored.uses for stored in store.invites()] == [2]


def test_expired_unknown_and_revoked_invites_admit_nobody(invites: Stores) -> None:
    store, people = invites
    made = invite("token-one-of-the-right-shape-0000", days=1)
    store.make_invite(made)
    assert not store.use_invite(made.digest, CAROL, AT + timedelta(days=1, seconds=1))
    assert not store.use_invite(digest_of("nobody-was-given-this-token-0000"), CAROL, AT)
    assert store.revoke_invite(made.id) and not store.revoke_invite(made.id)
    assert not store.use_invite(made.digest, CAROL, AT)
    assert store.invites() == [] and people.people() == []
