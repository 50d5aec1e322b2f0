"""What the assistant uses, per chat: turns, model and tool calls, tokens, and money.

Every model call of agent_turn goes through `MeteredModel` (speech, transcription and embeddings
through `MeteredSpeaker`, `MeteredTranscriber` and `MeteredEmbedder`, counted by cost only), so the
chat's turns, the heartbeat's decision, consolidation and background tasks are all counted, each
attributed to the chat of the job that made it: `UsageMeter.job`, given the job's subject
(core/subjects.py, which every job has, a button press included), makes the job's own `JobMeter`,
which the job's context carries (tools/context.py) and its models are metered by. A job counts as
one turn when the agent loop got at least one answer from the model (a turn continued in another
invocation counts once); a command such as /new, or a heartbeat that decided to skip, is not a turn,
though its model calls are counted. Cost is litellm's `completion_cost`, known only for models in
its price list: calls without a price are counted as `unpriced_calls`.

The store keeps a day's, a month's and the total figures per chat, each changed atomically, so
jobs of one chat running side by side (forum topics, background tasks) never lose each other's
counts (`adapters/aws/usage.py`: DynamoDB `ADD`s). A turn that saves its messages folds its
usage into the transaction that saves them (`JobMeter.folded`: no extra request); what other
jobs use (heartbeat, background tasks, /new, consolidation after the save, a failed turn) is
written on its own when the job ends. Usage is never worth failing a job: a write that fails is
logged and dropped.

Each job's figures also go to the metrics port (CloudWatch, see `core/telemetry.py`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from nanobot_lambda.core import telemetry, texts
from nanobot_lambda.core.errors import ChannelError, ModelError, StorageError
from nanobot_lambda.core.images import GeneratedImage, ImageGenerator
from nanobot_lambda.core.model import (
    ChatModel,
    CompletionRequest,
    Embedder,
    Embeddings,
    ModelReply,
    Speaker,
    Speech,
    Transcriber,
    Transcript,
)
from nanobot_lambda.core.sessions import TurnRecord
from nanobot_lambda.core.spend import SpendLimitReached, SpendLimits, first_reached, remaining
from nanobot_lambda.core.stored_writes import StoredWrite
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.telemetry import MetricsPort
from nanobot_lambda.core.usage_counts import (
    ByModel,
    Tally,
    UsageStore,
    UsageSummary,
    add_by_model,
)

logger = logging.getLogger(__name__)

UNKNOWN_TOOL = "unknown"  # a call to a tool the model was not offered (bounds the dimension)


# -- the texts -------------------------------------------------------------------------------


def describe(tally: Tally) -> str:
    """One period's figures: turns, calls, tokens in (cached) and out, cost."""
    if tally.empty:
        return texts.load("usage_none")
    return texts.render(
        "usage_period",
        turns=f"{tally.turns:,}",
        model_calls=f"{tally.model_calls:,}",
        tool_calls=f"{tally.tool_calls:,}",
        prompt_tokens=f"{tally.prompt_tokens:,}",
        cached_tokens=f"{tally.cached_tokens:,}",
        completion_tokens=f"{tally.completion_tokens:,}",
        cost=_cost(tally),
    )


def _cost(tally: Tally) -> str:
    if not tally.cost_known:
        return texts.load("usage_cost_unknown")
    cost = f"${tally.cost_usd:.4f}"
    if tally.unpriced_calls:
        return texts.render("usage_cost_partial", cost=cost, unpriced=tally.unpriced_calls)
    return cost


def per_model(by_model: dict[str, Tally]) -> str:
    """Each model's cost and calls, the costliest first."""
    ranked = sorted(by_model.items(), key=lambda pair: (-pair[1].cost_usd, pair[0]))
    return " · ".join(
        f"{model} {f'${tally.cost_usd:.4f}' if tally.cost_known else 'no price'}"
        f" ({tally.model_calls:,} calls)"
        for model, tally in ranked
    )


def periods(summary: UsageSummary) -> str:
    """Today, this month and all time, a line each."""
    return texts.render(
        "usage_periods",
        day=summary.day,
        month=summary.month,
        today=describe(summary.today),
        this_month=describe(summary.this_month),
        total=describe(summary.total),
    )


def usage_report(store: UsageStore, chat_id: int | None, at: datetime) -> str:
    """The operator's view (`nanobot-lambda usage`): one chat, or every chat with usage."""
    chats = [chat_id] if chat_id is not None else store.chats()
    if not chats:
        return "No usage recorded yet."
    return "\n\n".join(f"chat {chat}\n{periods(store.summary(chat, at))}" for chat in chats)


# -- counting --------------------------------------------------------------------------------


class UsageMeter:
    """Counts what the jobs of agent_turn use, each for its chat: built once per container,
    it holds the store and the limits; each job's counts are its `JobMeter`'s."""

    def __init__(
        self,
        store: UsageStore,
        metrics: MetricsPort,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        limits: SpendLimits | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.limits = limits or SpendLimits()

    @contextmanager
    def job(self, subject: Subject, *, continued: bool = False) -> Iterator[JobMeter]:
        """The meter of a job for its subject's chat, which checks that chat's spending limits
        before each call; what is still unwritten is written when the job ends. `continued`:
        the job continues a turn (counted as a turn by its first part)."""
        meter = JobMeter(self, subject.chat_id, continued=continued)
        try:
            yield meter
        except Exception as error:
            telemetry.error(
                "telegram_error" if isinstance(error, ChannelError) else "turn_failed",
                self.metrics,
            )
            raise
        finally:
            meter.finish()

    def report(self, chat_id: int, *, everyone: bool = True) -> str:
        """The /usage answer, with what is left of each spending limit: the chat's own, and
        with `everyone` (the owner's chat) what is left for all chats together."""
        at = self.clock()
        summary = self.store.summary(chat_id, at)
        text = texts.render("usage", periods=periods(summary))
        by_model = self.store.models(chat_id, at)
        if by_model:
            text += "\n" + texts.render("usage_models", models=per_model(by_model))
        overall = self.store.overall_summary(at) if self.limits.overall and everyone else None
        left = remaining(self.limits, summary, overall)
        return f"{text}\n\n{left}" if left else text


class JobMeter:
    """What one job uses, counted for its chat (made by `UsageMeter.job`)."""

    def __init__(self, meter: UsageMeter, chat_id: int, *, continued: bool = False) -> None:
        self._meter = meter
        self.chat_id = chat_id
        self._continued = continued  # a turn's continuation: counted by its first part
        self._started = time.monotonic()
        self._used = Tally()  # the whole job, for the metrics
        self._unwritten = Tally()  # not yet in DynamoDB
        self._unwritten_models: dict[str, Tally] = {}  # its part per model
        self._models: list[str] = []  # the models that answered, in order
        self._tools: Counter[str] = Counter()

    def metered(self, model: ChatModel) -> ChatModel:
        return MeteredModel(model, self)

    def metered_speaker(self, speaker: Speaker | None) -> Speaker | None:
        return None if speaker is None else MeteredSpeaker(speaker, self)

    def metered_images(self, images: ImageGenerator | None) -> ImageGenerator | None:
        return None if images is None else MeteredImages(images, self)

    def metered_transcriber(self, transcriber: Transcriber | None) -> Transcriber | None:
        return None if transcriber is None else MeteredTranscriber(transcriber, self)

    def metered_embedder(self, embedder: Embedder | None) -> Embedder | None:
        return None if embedder is None else MeteredEmbedder(embedder, self)

    @contextmanager
    def folded(self) -> Iterator[list[StoredWrite]]:
        """The unwritten usage as transaction items, for the write that saves the turn; counted
        as written once that write succeeds."""
        if self._unwritten.empty:
            yield []
            return
        meter = self._meter
        yield meter.store.updates(
            self.chat_id,
            self._unwritten,
            meter.clock(),
            overall=meter.limits.overall,
            by_model=self._unwritten_models,
        )
        self._unwritten, self._unwritten_models = Tally(), {}

    def check_spend(self) -> None:
        """Before a model call: raise SpendLimitReached when the job's chat, or all chats
        together, reached a spending limit (see core/spend.py). A failure to read the counters
        lets the call go ahead: the limits are a safety net, not worth failing a turn for."""
        meter = self._meter
        limits = meter.limits
        if not limits.any:
            return
        at = meter.clock()
        try:
            chat = meter.store.summary(self.chat_id, at) if limits.per_chat else None
            overall = meter.store.overall_summary(at) if limits.overall else None
        except StorageError as error:
            logger.warning("spending not checked: %s", error)
            return
        reached = first_reached(limits, self.chat_id, chat, overall, self._unwritten.cost_usd)
        if reached is not None:
            logger.warning(
                "spending limit reached: no model call",
                extra={"chat_id": self.chat_id, "limit": reached.notice_key},
            )
            raise SpendLimitReached(reached)

    # -- what MeteredModel reports ---------------------------------------------------------

    def answered(self, reply: ModelReply, *, offered: list[dict[str, Any]], agent: bool) -> None:
        """A model call returned. `agent`: a call of the agent loop (not a forced tool call
        for structured output), whose tool calls the loop will run."""
        counted = Tally.of_call(reply.usage)
        if agent:
            names = {definition["function"]["name"] for definition in offered}
            for call in reply.tool_calls:
                self._tools[call.name if call.name in names else UNKNOWN_TOOL] += 1
            turn = 0 if self._used.turns or self._continued else 1
            counted += Tally(turns=turn, tool_calls=len(reply.tool_calls))
        if reply.model is not None and reply.model not in self._models:
            self._models.append(reply.model)
        self._count(counted, {reply.model: counted} if reply.model is not None else {})

    def paid(self, cost_usd: float | None) -> None:
        """Speech, a transcription, embeddings or an image were made: the cost counts (calls
        without a price do not, and none counts as a model call)."""
        if cost_usd is not None:
            self._count(Tally(cost_usd=Decimal(repr(cost_usd))))

    def _count(self, counted: Tally, by_model: ByModel | None = None) -> None:
        self._used += counted
        if self._meter.limits.any:
            # Written now, not with the turn: turns running side by side see it before their
            # next call (core/spend.py).
            self._write(counted, by_model or {}, keep=True)
        else:
            self._unwritten += counted
            add_by_model(self._unwritten_models, by_model or {})

    def turn_record(self, *, error: str | None = None) -> TurnRecord:
        """What the job used so far, for the chat's recent turns (the console's Activity)."""
        used = self._used
        return TurnRecord(
            at=self._meter.clock().isoformat(timespec="seconds"),
            models=tuple(self._models),
            model_calls=used.model_calls,
            prompt_tokens=used.prompt_tokens,
            completion_tokens=used.completion_tokens,
            cost_usd=used.cost_usd if used.cost_known else None,
            tools=tuple(sorted(self._tools)),
            error=error,
        )

    def failed(self) -> None:
        telemetry.error("model_error", self._meter.metrics)

    def finish(self) -> None:
        """The job ended: its figures to the metrics, what is unwritten to the store."""
        used, metrics = self._used, self._meter.metrics
        if used.turns:
            telemetry.turn((time.monotonic() - self._started) * 1000, metrics)
        if used.model_calls:
            telemetry.model_usage(
                calls=used.model_calls,
                prompt_tokens=used.prompt_tokens,
                completion_tokens=used.completion_tokens,
                cached_tokens=used.cached_tokens,
                cost_usd=float(used.cost_usd) if used.cost_known else None,
                port=metrics,
            )
        telemetry.tool_calls(self._tools, metrics)
        if not self._unwritten.empty:
            unwritten, self._unwritten = self._unwritten, Tally()
            by_model, self._unwritten_models = self._unwritten_models, {}
            self._write(unwritten, by_model, keep=False)

    def _write(self, tally: Tally, by_model: ByModel, *, keep: bool) -> None:
        """Record `tally` now; when that fails, keep it for the job's next write (`keep`)."""
        meter = self._meter
        try:
            meter.store.add(
                self.chat_id,
                tally,
                meter.clock(),
                overall=meter.limits.overall,
                by_model=by_model,
            )
        except StorageError as error:
            if keep:
                self._unwritten += tally
                add_by_model(self._unwritten_models, by_model)
                return
            logger.warning("usage not recorded: %s", error)


class MeteredModel:
    """A `ChatModel` that reports each call to the meter, in a trace subsegment of its own."""

    def __init__(self, model: ChatModel, meter: JobMeter) -> None:
        self._model = model
        self._meter = meter

    def complete(self, request: CompletionRequest) -> ModelReply:
        self._meter.check_spend()
        with telemetry.span("model"):
            try:
                reply = self._model.complete(request)
            except ModelError:
                self._meter.failed()
                raise
        self._meter.answered(reply, offered=request.tools, agent=request.tool_choice is None)
        return reply


class MeteredSpeaker:
    """A `Speaker` whose speech costs are counted, and which speaks no more past a limit."""

    def __init__(self, speaker: Speaker, meter: JobMeter) -> None:
        self._speaker = speaker
        self._meter = meter

    def speak(self, text: str) -> Speech:
        self._meter.check_spend()
        speech = self._speaker.speak(text)
        self._meter.paid(speech.cost_usd)
        return speech


class MeteredImages:
    """An `ImageGenerator` whose images are counted, and which makes none past a limit."""

    def __init__(self, images: ImageGenerator, meter: JobMeter) -> None:
        self._images = images
        self._meter = meter

    def generate(self, prompt: str, *, source: bytes | None = None) -> GeneratedImage:
        self._meter.check_spend()
        image = self._images.generate(prompt, source=source)
        self._meter.paid(image.cost_usd)
        return image


class MeteredTranscriber:
    """A `Transcriber` whose costs are counted (when known), and which stops past a limit."""

    def __init__(self, transcriber: Transcriber, meter: JobMeter) -> None:
        self._transcriber = transcriber
        self._meter = meter

    def transcribe(self, filename: str, data: bytes) -> Transcript:
        self._meter.check_spend()
        transcript = self._transcriber.transcribe(filename, data)
        self._meter.paid(transcript.cost_usd)
        return transcript


class MeteredEmbedder:
    """An `Embedder` whose costs are counted (litellm's price for the model), and which embeds
    no more past a spending limit (recall then falls back to words, core/hybrid_recall.py)."""

    def __init__(self, embedder: Embedder, meter: JobMeter) -> None:
        self._embedder = embedder
        self._meter = meter

    def embed(self, texts: Sequence[str]) -> Embeddings:
        self._meter.check_spend()
        embeddings = self._embedder.embed(texts)
        self._meter.paid(embeddings.cost_usd)
        return embeddings
