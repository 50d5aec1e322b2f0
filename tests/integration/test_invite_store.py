"""Invites in DynamoDB (moto server): a use counted with its person in one conditional
transaction, so concurrent webhooks never admit more people than a link has uses, nor count a
person twice; an expired, revoked or unknown invite admits nobody; the token is never stored."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.invites import DynamoInviteStore
from nanobot_lambda.adapters.aws.pairing import DynamoPairingStore
from nanobot_lambda.core.invites import Invite, digest_of
from nanobot_lambda.core.pairing import Asker
from nanobot_lambda.operator.local.cfn import TemplateContext

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOKEN = "a-token-of-the-right-shape-0123456"


@pytest.fixture
def stores(resources: TemplateContext) -> tuple[DynamoInviteStore, DynamoPairingStore]:
    table = resources.refs["SessionsTable"]
    return DynamoInviteStore(table, dynamodb_client), DynamoPairingStore(table, dynamodb_client)


def invite(uses: int, days: int = 7, token: str = TOKEN) -> Invite:
    return Invite(digest_of(token), NOW + timedelta(days=days), uses, NOW)


def test_concurrent_uses_never_admit_beyond_the_uses(
    stores: tuple[DynamoInviteStore, DynamoPairingStore],
) -> None:
    invites, people = stores
    invites.make_invite(invite(3))
    crowd = [Asker(300_000_000 + n, f"Person {n}") for n in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        admitted = list(pool.map(lambda who: invites.use_invite(digest_of(TOKEN), who, NOW), crowd))
    assert admitted.count(True) == 3
    assert {person.asker.user_id for person in people.people()} == {
        who.user_id for who, yes in zip(crowd, admitted, strict=True) if yes
    }
    (stored,) = invites.invites()
    assert (stored.uses, stored.max_uses) == (3, 3)


def test_the_same_person_at_once_is_admitted_once_and_counted_once(
    stores: tuple[DynamoInviteStore, DynamoPairingStore],
) -> None:
    invites, people = stores
    invites.make_invite(invite(5))
    bob = Asker(222222222, "Bob")
    with ThreadPoolExecutor(max_workers=4) as pool:
        admitted = list(
            pool.map(lambda _: invites.use_invite(digest_of(TOKEN), bob, NOW), range(4))
        )
    assert admitted.count(True) == 1
    assert invites.invites()[0].uses == 1 and len(people.people()) == 1


def test_expired_revoked_or_unknown_invites_admit_nobody(
    stores: tuple[DynamoInviteStore, DynamoPairingStore],
) -> None:
    invites, people = stores
    bob = Asker(222222222, "Bob")
    invites.make_invite(invite(5, days=1))
    assert not invites.use_invite(digest_of(TOKEN), bob, NOW + timedelta(days=1))
    assert not invites.use_invite(digest_of("another-token-nobody-was-given-0"), bob, NOW)
    made = invite(5, token="a-second-token-of-the-right-shape")
    invites.make_invite(made)
    assert invites.revoke_invite(made.id) and not invites.revoke_invite(made.id)
    assert not invites.use_invite(made.digest, bob, NOW)
    assert people.people() == []
    assert [stored.id for stored in invites.invites()] == [digest_of(TOKEN)[:8]]


def test_the_table_holds_the_token_s_digest_not_the_token(
    stores: tuple[DynamoInviteStore, DynamoPairingStore], resources: TemplateContext
) -> None:
    invites, _ = stores
    invites.make_invite(invite(1))
    items = boto3.client("dynamodb").scan(TableName=resources.refs["SessionsTable"])["Items"]
    assert TOKEN not in repr(items) and digest_of(TOKEN) in repr(items)
