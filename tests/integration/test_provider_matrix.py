"""The provider matrix: every provider a user would pick, streamed and not, through the real
adapter (`LitellmChatModel`) and litellm, over HTTP to a stand-in of the provider's own wire
format (tests/support/providers.py): a plain answer, a tool step through the agent loop, a forced
tool (consolidation's), an error and a rate limit before the answer and in the middle of a
stream, a stream cut off, and the usage with its cache tokens as the spend counters take it.

Retries do not sleep here (the `provider` fixture, tests/integration/conftest.py): the matrix
runs in seconds.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

import pytest
from httpcore._sync.connection_pool import PoolByteStream

from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.core.agent import AgentLoop
from nanobot_lambda.core.consolidation import SAVE_MEMORY, SAVE_MEMORY_TOOL
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import CompletionRequest, force_tool
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.core.usage import Tally
from nanobot_lambda.settings import LlmSettings
from nanobot_lambda.tools.files import file_tools
from tests.support.fakes import MemoryWorkspace
from tests.support.job_context import job_context
from tests.support.provider_servers import Answer
from tests.support.providers import Provider

STREAMED = [pytest.param(False, id="whole"), pytest.param(True, id="streamed")]
USER = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi?"}]
NOTE = "hi from the note"


def model_of(provider: Provider, retries: int = 1, model: str | None = None) -> LitellmChatModel:
    settings = {**provider.env(model), "LLM_NUM_RETRIES": str(retries)}
    return LitellmChatModel(LlmSettings.model_validate(settings))


class Shown:
    """What `on_text` was given: each text so far."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> None:
        self.texts.append(text)

    def restarts(self) -> int:
        """How often the text did not go on from where it was: a retried stream starting again."""
        return sum(not b.startswith(a) for a, b in zip(self.texts, self.texts[1:], strict=False))


def complete(
    provider: Provider, streamed: bool, *, retries: int = 1, **options: Any
) -> tuple[Any, Shown]:
    shown = Shown()
    reply = model_of(provider, retries).complete(
        CompletionRequest(USER, [], on_text=shown if streamed else None, **options)
    )
    return reply, shown


@pytest.mark.parametrize("streamed", STREAMED)
def test_a_plain_answer(provider: Provider, streamed: bool) -> None:
    provider.script(Answer(text="Hello there, how are you today?"))
    reply, shown = complete(provider, streamed)
    assert reply.content == "Hello there, how are you today?"
    assert reply.tool_calls == ()
    if streamed:
        assert len(shown.texts) > 1 and shown.texts[-1] == reply.content  # it arrived in pieces
    else:
        assert shown.texts == []
    assert len(provider.requests) == 1


@pytest.mark.parametrize("streamed", STREAMED)
def test_a_tool_step_through_the_agent_loop(provider: Provider, streamed: bool) -> None:
    workspace = MemoryWorkspace({"notes.md": NOTE})
    provider.script(
        Answer(text=None, tool_calls=[("read_file", {"path": "notes.md"})]),
        Answer(text="The note says hi."),
    )
    loop = AgentLoop(model_of(provider), ToolRegistry(file_tools()), 4)
    shown = Shown()
    outcome = loop.run(job_context(workspace), list(USER), on_text=shown if streamed else None)
    assert outcome.reply == "The note says hi."
    assert outcome.tool_calls == 1 and outcome.iterations == 2
    step, result, _ = outcome.new_messages
    assert step["tool_calls"][0]["function"]["name"] == "read_file"
    assert json.loads(step["tool_calls"][0]["function"]["arguments"]) == {"path": "notes.md"}
    assert result["tool_call_id"] == step["tool_calls"][0]["id"] and NOTE in result["content"]
    second = json.dumps(provider.requests[1])
    assert NOTE in second and "read_file" in second  # the result went back with its call
    assert len(provider.requests) == 2


@pytest.mark.parametrize("streamed", STREAMED)
def test_a_forced_tool_as_consolidation_asks(provider: Provider, streamed: bool) -> None:
    arguments = {"history_entry": "[2026-11-26 09:00] Talked.", "memory_update": "# Memory"}
    provider.script(Answer(text=None, tool_calls=[(SAVE_MEMORY, arguments)]))
    reply = model_of(provider).complete(
        CompletionRequest(
            USER,
            [SAVE_MEMORY_TOOL],
            tool_choice=force_tool(SAVE_MEMORY),
            on_text=(lambda text: None) if streamed else None,
        ),
    )
    call = reply.call_to(SAVE_MEMORY)
    assert call is not None and call.json_object() == arguments
    assert provider.forced_tool(provider.requests[0]) == SAVE_MEMORY


@pytest.mark.parametrize("streamed", STREAMED)
def test_an_error_on_every_attempt_is_a_model_error(provider: Provider, streamed: bool) -> None:
    provider.script(Answer(status=500), Answer(status=500))
    with pytest.raises(ModelError, match=r"status 50\d"):  # litellm makes Bedrock's 500 a 503
        complete(provider, streamed, retries=1)
    assert len(provider.requests) == 2  # one try, one retry


@pytest.mark.parametrize("streamed", STREAMED)
def test_a_rate_limit_is_waited_out(provider: Provider, streamed: bool) -> None:
    provider.script(Answer(status=429), Answer(text="After the limit."))
    reply, _ = complete(provider, streamed)
    assert reply.content == "After the limit."
    assert len(provider.requests) == 2


FAULTS = ["error", "rate_limit", "drop", "end"]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_stream_failing_midway_is_read_again_from_the_start(
    provider: Provider, fault: str
) -> None:
    provider.script(
        Answer(text="This answer breaks off before its end.", fault_after=3, fault=fault),
        Answer(text="The second try."),
    )
    reply, shown = complete(provider, True)
    assert reply.content == "The second try."
    assert shown.texts[-1] == "The second try." and shown.restarts() == 1
    assert len(provider.requests) == 2


@pytest.mark.parametrize("fault", FAULTS)
def test_a_stream_cut_off_is_never_taken_for_an_answer(provider: Provider, fault: str) -> None:
    """Whatever arrived before the cut, without the provider's end the reply is a failure."""
    provider.script(
        Answer(text="This answer breaks off before its end.", fault_after=3, fault=fault)
    )
    with pytest.raises(ModelError) as failure:
        complete(provider, True, retries=0)
    if fault == "end":  # a well-formed body: only the provider's missing end tells
        assert "without a finish_reason" in str(failure.value)
    assert len(provider.requests) == 1


class ResponsesMade:
    """The HTTP responses httpcore opens during the test: how many, and those still alive (one
    left to the garbage collector included, as a walk of every object the process holds would
    find it; the walk takes a second on this heap, for each test of the matrix)."""

    def __init__(self) -> None:
        self.count = 0
        self.alive: weakref.WeakSet[PoolByteStream] = weakref.WeakSet()

    def open(self) -> list[PoolByteStream]:
        return [response for response in self.alive if not response._closed]


@pytest.fixture
def responses_made(monkeypatch: pytest.MonkeyPatch) -> ResponsesMade:
    made = ResponsesMade()
    opened = PoolByteStream.__init__

    def tracked(self: PoolByteStream, *args: Any, **kwargs: Any) -> None:
        opened(self, *args, **kwargs)
        made.count += 1
        made.alive.add(self)

    monkeypatch.setattr(PoolByteStream, "__init__", tracked)
    return made


@pytest.mark.parametrize("fault", [*FAULTS, "display"])
def test_a_stream_read_that_ends_early_leaves_no_response_open(
    provider: Provider, fault: str, responses_made: ResponsesMade
) -> None:
    """However the read of a stream ends (the provider's fault, or the display failing), its
    response is closed at once. Left to the garbage collector, it would be closed wherever the
    collector runs, and that may be inside httpcore's connection pool while the pool holds the
    lock that closing takes: the thread waits on itself for ever (encode/httpcore#990). Anthropic's
    and the OpenAI-compatible streams left theirs open, and this suite hung on it."""
    broken = Answer(text="This answer breaks off before its end.", fault_after=3, fault=fault)
    if fault == "display":
        provider.script(Answer(text="An answer the display cannot show."))

        def display(text: str) -> None:
            raise RuntimeError("the display broke")

        with pytest.raises(RuntimeError, match="the display broke"):
            model_of(provider).complete(CompletionRequest(USER, [], on_text=display))
    else:
        provider.script(broken, broken)
        with pytest.raises(ModelError):
            complete(provider, True, retries=1)
    assert responses_made.count > 0  # the provider was reached over httpcore
    assert responses_made.open() == []


@pytest.mark.parametrize("streamed", STREAMED)
def test_usage_and_cache_tokens_reach_the_spend_counters(
    provider: Provider, streamed: bool
) -> None:
    writes = 30 if provider.name in ("anthropic", "bedrock") else 0  # others report no writes
    provider.script(
        Answer(
            text="Cached.",
            input_tokens=100,
            output_tokens=20,
            cache_read_tokens=600,
            cache_write_tokens=writes,
        )
    )
    reply, _ = complete(provider, streamed)
    usage = reply.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (700 + writes, 20)
    assert usage.cached_tokens == 600
    tally = Tally.of_call(usage)  # what /usage shows and the spending limits count
    assert tally.cached_tokens == 600 and tally.prompt_tokens == 700 + writes
    if provider.priced:
        assert usage.cost_usd is not None and usage.cost_usd > 0 and tally.cost_known
    else:
        assert usage.cost_usd is None and tally.unpriced_calls == 1
