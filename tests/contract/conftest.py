"""Contract tests: one suite of expectations per storage port, run against the in-memory fake
(tests/support/fakes.py, what the unit tests use) and against the real adapter on moto server.

Each test takes a port fixture parametrized by `backend`: `fake` builds the fake, `moto` the
adapter the functions use, on a table of its own made with the template's key schema (or a
bucket of its own). A test that passes on `moto` and
fails on `fake` found a drift: the fake is fixed to behave like the store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import boto3
import pytest

from nanobot_lambda.adapters.aws.albums import DynamoAlbumBook
from nanobot_lambda.adapters.aws.clients import dynamodb_client, s3_client
from nanobot_lambda.adapters.aws.invites import DynamoInviteStore
from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.journal import DynamoTurnJournal
from nanobot_lambda.adapters.aws.pairing import DynamoPairingStore
from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.invites import InviteStore
from nanobot_lambda.core.ports import (
    AlbumBook,
    JobStore,
    PairingStore,
    SessionStore,
    TurnJournal,
    UsageStore,
    Workspace,
)
from nanobot_lambda.operator.local.cfn import load_template
from tests.conftest import TEMPLATE
from tests.support.fakes import (
    MemoryAlbumBook,
    MemoryInviteStore,
    MemoryJobStore,
    MemoryPairingStore,
    MemorySessionStore,
    MemoryTurnJournal,
    MemoryUsageStore,
    MemoryWorkspace,
)

BACKENDS = ["fake", "moto"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


TEMPLATE_RESOURCES = load_template(TEMPLATE)["Resources"]


@pytest.fixture
def on_moto(backend: str, request: pytest.FixtureRequest) -> bool:
    """Whether this test runs on moto (boto3 then points at the session's moto server)."""
    if backend == "fake":
        return False
    request.getfixturevalue("aws")
    return True


def fresh_table(logical_id: str) -> str:
    """A new DynamoDB table with the template's key schema for `logical_id`: each test its own,
    so that what one test stores is never another's (the pairing partition, usage of all
    chats)."""
    properties = TEMPLATE_RESOURCES[logical_id]["Properties"]
    name = f"ct-{uuid.uuid4().hex[:8]}-{logical_id.lower()}"
    boto3.client("dynamodb").create_table(
        TableName=name,
        KeySchema=properties["KeySchema"],
        AttributeDefinitions=properties["AttributeDefinitions"],
        BillingMode=properties["BillingMode"],
    )
    return name


def fresh_bucket() -> str:
    name = f"ct-{uuid.uuid4().hex[:8]}-workspace"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


@pytest.fixture
def workspace(on_moto: bool) -> Workspace:
    return S3Workspace(fresh_bucket(), s3_client()) if on_moto else MemoryWorkspace()


@dataclass(frozen=True)
class SessionStores:
    """A session store and the journal whose records its loads return and whose `finish`
    writes its appends make (one table in DynamoDB, one journal object in memory)."""

    sessions: SessionStore
    journal: TurnJournal


@pytest.fixture
def session_stores(on_moto: bool) -> SessionStores:
    if not on_moto:
        journal = MemoryTurnJournal()
        return SessionStores(MemorySessionStore(journal), journal)
    table = fresh_table("SessionsTable")
    client = dynamodb_client()
    return SessionStores(DynamoSessionStore(table, client), DynamoTurnJournal(table, client))


@pytest.fixture
def sessions(session_stores: SessionStores) -> SessionStore:
    return session_stores.sessions


@pytest.fixture
def journal(session_stores: SessionStores) -> TurnJournal:
    return session_stores.journal


@pytest.fixture
def jobs(on_moto: bool) -> JobStore:
    return (
        DynamoJobStore(fresh_table("JobsTable"), dynamodb_client()) if on_moto else MemoryJobStore()
    )


UsageFactory = Callable[[str], UsageStore]


@pytest.fixture
def usage_store(on_moto: bool) -> UsageFactory:
    """A usage store counting days and months in the given time zone."""
    if not on_moto:
        return lambda timezone: MemoryUsageStore(timezone=timezone)
    table = fresh_table("SessionsTable")
    client = dynamodb_client()
    return lambda timezone: DynamoUsageStore(table, client, timezone=timezone)


@pytest.fixture
def usage(usage_store: UsageFactory) -> UsageStore:
    return usage_store("UTC")


@pytest.fixture
def usage_and_sessions(on_moto: bool) -> tuple[UsageStore, SessionStore]:
    """A usage store and the session store whose appends make its `updates`."""
    if not on_moto:
        return MemoryUsageStore(), MemorySessionStore()
    table = fresh_table("SessionsTable")
    client = dynamodb_client()
    return DynamoUsageStore(table, client, timezone="UTC"), DynamoSessionStore(table, client)


@pytest.fixture
def pairing(on_moto: bool) -> PairingStore:
    if not on_moto:
        return MemoryPairingStore()
    return DynamoPairingStore(fresh_table("SessionsTable"), dynamodb_client)


@pytest.fixture
def invites(on_moto: bool) -> tuple[InviteStore, PairingStore]:
    """An invite store and the people it admits into."""
    if not on_moto:
        people = MemoryPairingStore()
        return MemoryInviteStore(people), people
    table = fresh_table("SessionsTable")
    return DynamoInviteStore(table, dynamodb_client), DynamoPairingStore(table, dynamodb_client)


@pytest.fixture
def albums(on_moto: bool) -> AlbumBook:
    if not on_moto:
        return MemoryAlbumBook()
    return DynamoAlbumBook(fresh_table("SessionsTable"), dynamodb_client)
