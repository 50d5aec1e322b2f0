"""Hybrid recall on moto server (real HTTP S3) with the stand-in embedding model served over
OpenAI's /v1/embeddings and reached through litellm: the recall index's conditional reads and
writes, races between containers, unusable objects, and each scope's own recall."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import pytest

from nanobot_lambda.adapters.aws.clients import s3_client
from nanobot_lambda.adapters.aws.recall_index import S3RecallIndexObjects, index_key
from nanobot_lambda.adapters.aws.workspace import S3Workspace, scope_workspaces
from nanobot_lambda.adapters.llm.embeddings import LitellmEmbedder, embedder_for
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.hybrid_recall import HybridRecall, RecallIndexer, ScopeIndexes
from nanobot_lambda.core.memory import HISTORY_FILE, append_history
from nanobot_lambda.core.recall_index import IndexUpdate, decode, make_chunk, quantize
from nanobot_lambda.core.scopes import OWNER, Scope, ScopeWorkspaces
from nanobot_lambda.core.usage import JobMeter, UsageMeter
from nanobot_lambda.functions.agent_turn.recall import TurnRecall
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.context import JobContext
from tests.integration.test_workspace_concurrency import run_concurrently
from tests.support.aws_requests import RequestCounter
from tests.support.embedding_server import EmbeddingServer
from tests.support.fakes import MemoryUsageStore, RecordingMetrics
from tests.support.job_context import job_context
from tests.support.settings import AGENT_ENV

DENTIST = "[2026-10-05 18:40] Booked the dentist, Dr. Moreau, for December 3rd at 9am."
LISBON = "[2026-10-02 09:15] Planned the trip to Lisbon with Ana; trains were rejected."
PARAPHRASE = "When do I see someone about my teeth?"
ANA, BOB = Scope("people/222"), Scope("people/333")
WRITERS = 8


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    return resources.refs["WorkspaceBucket"]


@pytest.fixture
def embeddings() -> Iterator[EmbeddingServer]:
    server = EmbeddingServer().start()
    yield server
    server.stop()


def embedder(server: EmbeddingServer) -> LitellmEmbedder:
    # LLM_MODEL is OpenAI's too: its key is the one the embedding requests carry.
    environ = {**AGENT_ENV, **server.env(), "LLM_API_KEY": "sk-stand-in", "LLM_NUM_RETRIES": "0"}
    settings = AgentSettings.from_env(environ)
    made = embedder_for(settings)
    assert isinstance(made, LitellmEmbedder)
    return made


def indexes(bucket: str) -> ScopeIndexes:
    """A fresh container's: its own client and cache."""
    return ScopeIndexes(S3RecallIndexObjects(bucket, s3_client()), EmbeddingServer.MODEL)


def test_the_embedder_speaks_openai_through_litellm_and_is_priced(
    aws: str, embeddings: EmbeddingServer
) -> None:
    result = embedder(embeddings).embed(["tooth appointment", "dentist"])
    assert embeddings.requests == [["tooth appointment", "dentist"]]
    assert len(result.vectors) == 2 and len(result.vectors[0]) == 256
    assert sum(a * b for a, b in zip(*result.vectors, strict=True)) > 0.3
    assert result.cost_usd is not None and result.cost_usd > 0  # litellm's price for the model


def test_a_failed_embedding_is_a_model_error_naming_no_text(
    aws: str, embeddings: EmbeddingServer
) -> None:
    embeddings.fail_next(3)
    with pytest.raises(ModelError) as raised:
        embedder(embeddings).embed(["my secret diary entry"])
    assert "diary" not in str(raised.value) and "status 500" in str(raised.value)


def test_a_paraphrase_is_recalled_in_its_persons_scope_and_not_anothers(
    bucket: str, embeddings: EmbeddingServer
) -> None:
    s3 = s3_client()
    own = scope_workspaces(bucket, s3)
    scopes = ScopeWorkspaces(S3Workspace(bucket, s3), own)
    append_history(own(ANA), DENTIST)
    append_history(own(BOB), LISBON)
    made = embedder(embeddings)
    scope_indexes = indexes(bucket)
    indexer = RecallIndexer(scope_indexes, made)
    for scope in (ANA, BOB):
        indexer.index_scope(scope, own(scope))

    recall = HybridRecall(scope_indexes)
    ana, bob = scopes.of(ANA), scopes.of(BOB)
    assert recall.search(PARAPHRASE, workspace=ana, scope=ANA, embedder=made)[0] == DENTIST
    assert DENTIST not in recall.search(PARAPHRASE, workspace=bob, scope=BOB, embedder=made)
    # Each scope's object holds its own text only, under its own key, outside the workspace.
    stored = {
        scope: s3.get_object(Bucket=bucket, Key=index_key(scope))["Body"].read()
        for scope in (ANA, BOB)
    }
    assert b"Moreau" in stored[ANA] and b"Moreau" not in stored[BOB]
    assert b"Lisbon" in stored[BOB] and b"Lisbon" not in stored[ANA]
    assert index_key(ANA) == "recall/people/222/index.nri"
    assert all("recall" not in entry.path for entry in bob.list_files(""))


def test_a_warm_turn_with_an_unchanged_index_makes_one_conditional_get(
    bucket: str, embeddings: EmbeddingServer
) -> None:
    workspace = S3Workspace(bucket, s3_client())
    append_history(workspace, DENTIST)
    made = embedder(embeddings)
    RecallIndexer(indexes(bucket), made).index_scope(OWNER, workspace)
    counter = RequestCounter()
    try:
        scope_indexes = indexes(bucket)  # created after the counter: its requests are counted
        recall = partial(
            HybridRecall(scope_indexes).search, workspace=workspace, scope=OWNER, embedder=made
        )
        workspace.refresh()
        recall(PARAPHRASE)  # cold: the index is read
        counter.reset()
        assert recall(PARAPHRASE)[0] == DENTIST
        assert counter.operations("s3") == {"GetObject": 1}  # the index's conditional GET: 304
        objects = S3RecallIndexObjects(bucket, s3_client())
        stored = objects.get(OWNER)
        assert stored is not None and stored.data is not None
        unchanged = objects.get(OWNER, unless_etag=stored.etag)
        assert unchanged is not None and unchanged.data is None  # S3's 304: no bytes sent
    finally:
        counter.close()


def test_writers_in_separate_containers_never_lose_each_others_chunks(bucket: str) -> None:
    def writer(number: int) -> None:
        chunk = make_chunk("history", HISTORY_FILE, float(number), f"entry of writer {number}")
        vector = [1.0 if dim == number else 0.0 for dim in range(16)]
        update = IndexUpdate(EmbeddingServer.MODEL, 16, ((chunk, quantize(vector)),))
        indexes(bucket).update(OWNER, update)

    run_concurrently(writer, WRITERS)
    body = s3_client().get_object(Bucket=bucket, Key=index_key(OWNER))["Body"].read()
    stored = decode(body)
    assert sorted(chunk.text for chunk in stored.chunks) == sorted(
        f"entry of writer {n}" for n in range(WRITERS)
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:4] + b"\x00\x00" + data[6:],  # an older format version
        lambda data: b"not an index at all",
    ],
    ids=["truncated", "older format", "garbage"],
)
def test_an_unusable_stored_index_is_words_only_then_rebuilt(
    bucket: str, embeddings: EmbeddingServer, damage: Callable[[bytes], bytes]
) -> None:
    s3 = s3_client()
    workspace = S3Workspace(bucket, s3)
    append_history(workspace, DENTIST)
    append_history(workspace, LISBON)
    made = embedder(embeddings)
    RecallIndexer(indexes(bucket), made).index_scope(OWNER, workspace)
    key = index_key(OWNER)
    good = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    s3.put_object(Bucket=bucket, Key=key, Body=damage(good))

    scope_indexes = indexes(bucket)
    recall = partial(
        HybridRecall(scope_indexes).search, workspace=workspace, scope=OWNER, embedder=made
    )
    assert recall(PARAPHRASE) == []  # no vectors, no error
    assert recall("the trip to Lisbon")[0] == LISBON  # words still work
    assert RecallIndexer(scope_indexes, made).index_scope(OWNER, workspace).added == 2
    assert decode(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) is not None
    assert recall(PARAPHRASE)[0] == DENTIST


def test_turn_recall_as_agent_turn_holds_it_keeps_each_persons_recall_their_own(
    bucket: str, embeddings: EmbeddingServer
) -> None:
    s3 = s3_client()
    own = scope_workspaces(bucket, s3)
    scopes = ScopeWorkspaces(S3Workspace(bucket, s3), own)
    environ = {**AGENT_ENV, **embeddings.env(), "LLM_API_KEY": "sk-stand-in"}
    meter = UsageMeter(MemoryUsageStore(), RecordingMetrics())
    recall = TurnRecall(
        AgentSettings.from_env(environ),
        embedder_for(AgentSettings.from_env(environ)),
        S3RecallIndexObjects(bucket, s3),
    )

    def job(scope: Scope, person: int) -> JobContext:
        """A job of `person`'s chat, in `scope` (its context, as agent_turn makes it)."""
        workspace = scopes.of(scope)
        workspace.refresh()
        return job_context(workspace, chat_id=person, scope=scope, meter=JobMeter(meter, person))

    append_history(own(ANA), DENTIST)
    for scope, person in ((ANA, 222), (BOB, 333)):
        notes = (f"uploads/{person}/notes.txt", f"Notes of person {person}.")
        recall.after_reply(job(scope, person), [notes])
    assert recall.search(job(ANA, 222), PARAPHRASE)[0] == DENTIST
    bob = job(BOB, 333)
    assert DENTIST not in recall.search(bob, PARAPHRASE)
    assert all("222" not in text for text in recall.search(bob, "notes of the person"))
