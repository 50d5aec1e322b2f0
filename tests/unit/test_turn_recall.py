"""TurnRecall, what agent_turn holds: BM25 alone without EMBEDDING_MODEL, hybrid with it, each
scope's own index, embeddings counted for the job's chat."""

from __future__ import annotations

from datetime import UTC, datetime

from nanobot_lambda.core.memory import HISTORY_FILE
from nanobot_lambda.core.scopes import OWNER, Scope, ScopeWorkspaces
from nanobot_lambda.core.usage import JobMeter, UsageMeter
from nanobot_lambda.functions.agent_turn.recall import TurnRecall
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.context import JobContext
from tests.support.fakes import (
    MemoryRecallIndexObjects,
    MemoryUsageStore,
    MemoryWorkspace,
    RecordingMetrics,
    StandInEmbedder,
)
from tests.support.job_context import job_context
from tests.support.settings import AGENT_ENV

DENTIST = "[2026-10-05 18:40] Booked the dentist, Dr. Moreau, for December 3rd at 9am."
LISBON = "[2026-10-02 09:15] Planned the trip to Lisbon with Ana; trains were rejected."
PARAPHRASE = "When do I see someone about my teeth?"
ANA = Scope("people/222")


class Container:
    def __init__(self, environ: dict[str, str]) -> None:
        self.owner = MemoryWorkspace({HISTORY_FILE: f"# History\n\n{LISBON}\n"})
        self.ana = MemoryWorkspace({HISTORY_FILE: f"# History\n\n{DENTIST}\n"})
        self.scopes = ScopeWorkspaces(self.owner, lambda scope: self.ana)
        self.usage = MemoryUsageStore()
        self.meter = UsageMeter(self.usage, RecordingMetrics())
        self.embedder = StandInEmbedder("openai/text-embedding-3-small", cost_per_call=0.001)
        self.objects = MemoryRecallIndexObjects()
        settings = AgentSettings.from_env({**AGENT_ENV, **environ})
        self.recall = TurnRecall(settings, self.embedder, self.objects)

    def job(self, scope: Scope) -> JobContext:
        """The context of a job in `scope`'s chat (Ana's: 222; the owner's: 1)."""
        chat = 222 if scope == ANA else 1
        workspace = self.scopes.of(scope)
        return job_context(workspace, chat_id=chat, scope=scope, meter=JobMeter(self.meter, chat))


def test_without_an_embedding_model_recall_is_by_words_and_indexes_nothing() -> None:
    container = Container({})
    assert not container.recall.hybrid
    ana = container.job(ANA)
    container.recall.after_reply(ana, [("uploads/1/a.pdf.txt", "Some text.")])
    assert container.recall.search(ana, "the dentist")[0] == DENTIST
    assert container.recall.search(ana, PARAPHRASE) == []
    assert container.embedder.calls == [] and container.objects.objects == {}


def test_with_one_a_paraphrase_is_recalled_in_the_scope_that_indexed_it_only() -> None:
    container = Container({"EMBEDDING_MODEL": "openai/text-embedding-3-small"})
    assert container.recall.hybrid
    ana = container.job(ANA)
    container.recall.after_reply(ana)  # after the reply and any consolidation
    assert container.recall.search(ana, PARAPHRASE)[0] == DENTIST
    ana.meter.finish()
    assert set(container.objects.objects) == {ANA}
    assert DENTIST not in container.recall.search(container.job(OWNER), PARAPHRASE)
    spent = container.usage.summary(222, datetime.now(UTC)).today.cost_usd
    assert spent > 0  # the embeddings were counted for Ana's chat


def test_a_document_is_indexed_in_its_job_s_scope() -> None:
    container = Container({"EMBEDDING_MODEL": "openai/text-embedding-3-small"})
    ana = container.job(ANA)
    lease = ("uploads/222/2026-11/lease.pdf.txt", "The landlord wants rent.")
    container.recall.after_reply(ana, [lease])
    found = container.recall.search(ana, "what does the apartment contract say about payments")
    assert found[0] == "(lease.pdf.txt) The landlord wants rent."
    assert set(container.objects.objects) == {ANA}


def test_a_failed_indexing_run_is_quiet_and_recall_still_answers() -> None:
    container = Container({"EMBEDDING_MODEL": "openai/text-embedding-3-small"})
    ana = container.job(ANA)
    container.embedder.failures = 1
    container.recall.after_reply(ana)  # logged, not raised
    assert container.objects.objects == {}
    assert container.recall.search(ana, "the dentist")[0] == DENTIST
    container.recall.after_reply(container.job(ANA))  # the next job's end tries again
    assert container.recall.search(ana, PARAPHRASE)[0] == DENTIST


def test_a_job_that_changed_nothing_embeds_nothing_at_its_end() -> None:
    container = Container({"EMBEDDING_MODEL": "openai/text-embedding-3-small"})
    container.recall.after_reply(container.job(ANA))
    calls, puts = len(container.embedder.calls), container.objects.puts
    container.recall.after_reply(container.job(ANA))
    assert (len(container.embedder.calls), container.objects.puts) == (calls, puts)
    container.ana.files[HISTORY_FILE] += f"\n{LISBON}\n".encode()  # a consolidation wrote
    container.recall.after_reply(container.job(ANA))
    assert container.embedder.calls[-1] == [LISBON] and container.objects.puts == puts + 1


def test_a_job_indexes_its_own_documents_only() -> None:
    """Ana's job's document is hers: the owner's job that ends next indexes none of it."""
    container = Container({"EMBEDDING_MODEL": "openai/text-embedding-3-small"})
    container.recall.after_reply(container.job(ANA), [("uploads/222/a.txt", "Ana's notes.")])
    embedded = len(container.embedder.calls)
    container.recall.after_reply(container.job(OWNER))
    assert all("Ana's notes." not in call for call in container.embedder.calls[embedded:])
    assert set(container.objects.objects) == {ANA, OWNER}
    assert b"Ana's notes" not in container.objects.objects[OWNER]
