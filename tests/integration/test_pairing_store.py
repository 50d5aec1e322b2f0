"""Pairing in DynamoDB (moto server): codes open once and close once, approvals and refusals,
the hour's limit held under concurrent webhooks, and the listing for /people."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.pairing import DynamoPairingStore
from nanobot_lambda.core.pairing import Asker, PairingCode
from nanobot_lambda.operator.local.cfn import TemplateContext

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
BOB = Asker(222222222, "Bob Builder", "bob")
EVE = Asker(666666666, "Eve")


@pytest.fixture
def store(resources: TemplateContext) -> DynamoPairingStore:
    return DynamoPairingStore(resources.refs["SessionsTable"], dynamodb_client)


def test_a_code_opens_once_and_is_recorded_for_its_person(store: DynamoPairingStore) -> None:
    code = PairingCode("123456", BOB, NOW + timedelta(hours=1))
    assert store.open_code(code, "2026-11-23", 1)
    assert not store.open_code(PairingCode("123456", EVE, code.expires), "2026-11-23", 1)
    assert store.code("123456") == code
    asked = store.ask_record(BOB.user_id)
    assert asked is not None and (asked.code, asked.expires, asked.count) == (
        "123456",
        code.expires,
        1,
    )
    assert store.ask_record(EVE.user_id) is None  # Eve's attempt left nothing
    assert store.open_codes() == [code]


def test_approving_closes_the_code_and_a_replay_gets_nothing(store: DynamoPairingStore) -> None:
    code = PairingCode("111111", BOB, NOW + timedelta(hours=1))
    store.open_code(code, "2026-11-23", 1)
    assert store.approve(code, NOW)
    assert not store.approve(code, NOW)  # used once
    assert store.code("111111") is None and store.ask_record(BOB.user_id) is None
    (person,) = store.people()
    assert (person.asker, person.approved_at) == (BOB, NOW)
    assert store.person(BOB.user_id) == person and store.person(EVE.user_id) is None
    assert store.remove(BOB.user_id) and not store.remove(BOB.user_id)


def test_a_refusal_closes_the_code_and_is_remembered(store: DynamoPairingStore) -> None:
    code = PairingCode("222222", EVE, NOW + timedelta(hours=1))
    store.open_code(code, "2026-11-23", 1)
    until = NOW + timedelta(hours=24)
    assert store.deny(code, until)
    assert not store.approve(code, NOW)
    asked = store.ask_record(EVE.user_id)
    assert asked is not None and asked.denied_until == until and asked.code is None
    assert store.people() == []


def test_the_hour_s_limit_holds_under_concurrent_webhooks(store: DynamoPairingStore) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        taken = list(pool.map(lambda _: store.take_hour_slot("2026-11-23T12", 5), range(20)))
    assert taken.count(True) == 5
    assert store.take_hour_slot("2026-11-23T13", 5)  # the next hour starts afresh
