"""The provider matrix's providers: each a stand-in of its wire format on 127.0.0.1 and the
litellm model that reaches it, scripted with the same `Answer`s (tests/support/provider_servers.py).

`PROVIDERS` names them: OpenAI's chat completions and OpenAI-compatible local servers (vLLM's
`hosted_vllm/…`, any other as `openai/…`) on `ScriptedModelServer`, Anthropic's Messages API on
`AnthropicServer`, Gemini (AI Studio) on `GeminiServer`, Bedrock's Converse on `BedrockServer`.
Each also reads back from a request body what the provider-specific parts of a test look at:
the tool forced, the thinking sent back.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.support.anthropic_server import AnthropicServer
from tests.support.provider_servers import Answer, BedrockServer, GeminiServer, ProviderServer
from tests.support.scripted_model import ScriptedModelServer, Step


class Provider:
    """A stand-in, started, and the model that reaches it (`reasoning_model`: one that thinks)."""

    name = ""
    model = ""
    reasoning_model = ""
    priced = True  # litellm knows the model's price, so a call's cost is known

    def env(self, model: str | None = None) -> dict[str, str]:
        raise NotImplementedError

    def script(self, *answers: Answer) -> None:
        raise NotImplementedError

    @property
    def requests(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def reset(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def forced_tool(self, body: dict[str, Any]) -> str | None:
        """The tool the request forces the model to call, in the provider's own words."""
        raise NotImplementedError

    def thinking_sent(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        """The thinking the request gives back: (text, signature) pairs ("" where the provider
        takes only the signature)."""
        raise NotImplementedError

    def refusals(self) -> list[str]:
        return []


class OpenAiProvider(Provider):
    name = "openai"
    model = "openai/gpt-4o-mini"
    reasoning_model = "openai/o4-mini"

    def __init__(self) -> None:
        self.server = ScriptedModelServer().start()
        self._ids = itertools.count(1)

    def env(self, model: str | None = None) -> dict[str, str]:
        return {
            "LLM_MODEL": model or self.model,
            "LLM_API_BASE": self.server.base_url,
            "LLM_API_KEY": "sk-matrix",
        }

    def script(self, *answers: Answer) -> None:
        for answer in answers:
            self.server.steps.append(self._step(answer))

    def _step(self, answer: Answer) -> Step:
        calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments in answer.tool_calls
        ]
        faults: dict[str, Any] = {}
        if answer.fault_after is not None:
            after = answer.fault_after
            faults = {
                "error": {"error_after": after},
                "rate_limit": {"error_after": after, "error_code": 429},
                "drop": {"break_after": after},
                "end": {"truncate_after": after},
            }[answer.fault]
        reasoning = " ".join(thought.text for thought in answer.thinking) or None
        return Step(
            content=answer.text,
            tool_calls=calls,
            status=answer.status,
            reasoning_content=reasoning,
            prompt_tokens=answer.input_tokens + answer.cache_read_tokens,
            completion_tokens=answer.output_tokens,
            cached_tokens=answer.cache_read_tokens,
            **faults,
        )

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def reset(self) -> None:
        self.server.steps.clear()
        self.server.requests.clear()
        self.server.unexpected.clear()

    def stop(self) -> None:
        self.server.stop()

    def forced_tool(self, body: dict[str, Any]) -> str | None:
        choice = body.get("tool_choice")
        return choice["function"]["name"] if isinstance(choice, dict) else None

    def thinking_sent(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            (message["reasoning_content"], "")
            for message in body["messages"]
            if message.get("reasoning_content")
        ]


class LocalProvider(OpenAiProvider):
    """An OpenAI-compatible local server (vLLM; Ollama's and LM Studio's /v1 are the same)."""

    name = "local"
    model = "hosted_vllm/qwen3-8b"
    reasoning_model = "hosted_vllm/qwen3-8b"
    priced = False


class _AnswerProvider(Provider):
    """A stand-in that takes `Answer`s as they are."""

    server: ProviderServer

    def env(self, model: str | None = None) -> dict[str, str]:
        return {"LLM_MODEL": model or self.model, "LLM_API_BASE": self.server.url} | {
            "LLM_API_KEY": f"{self.name}-matrix-key"
        }

    def script(self, *answers: Answer) -> None:
        self.server.script(*answers)

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def reset(self) -> None:
        for kept in (self.server.answers, self.server.requests, self.server.unexpected):
            kept.clear()
        self.server.refused.clear()

    def stop(self) -> None:
        self.server.stop()

    def refusals(self) -> list[str]:
        return self.server.refused


class CompatibleProvider(OpenAiProvider):
    """Any OpenAI-compatible server through litellm's OpenAI client (`openai/…` with api_base:
    Ollama's /v1, LM Studio, llama.cpp), a model litellm does not know."""

    name = "compatible"
    model = "openai/llama3.2"
    reasoning_model = "openai/qwen3"
    priced = False


class AnthropicProvider(_AnswerProvider):
    name = "anthropic"
    model = AnthropicServer.MODEL
    reasoning_model = model

    def __init__(self) -> None:
        self.server = AnthropicServer().start()

    def forced_tool(self, body: dict[str, Any]) -> str | None:
        choice = body.get("tool_choice") or {}
        return choice.get("name") if choice.get("type") == "tool" else None

    def thinking_sent(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            (block["thinking"], block["signature"])
            for message in body["messages"]
            for block in (message["content"] if isinstance(message["content"], list) else [])
            if block.get("type") == "thinking"
        ]


class GeminiProvider(_AnswerProvider):
    name = "gemini"
    model = GeminiServer.MODEL
    reasoning_model = model

    def __init__(self) -> None:
        self.server = GeminiServer().start()

    def forced_tool(self, body: dict[str, Any]) -> str | None:
        config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        # Gemini's JSON takes its fields in either case; litellm writes this one in snake case.
        names = config.get("allowedFunctionNames") or config.get("allowed_function_names")
        names = names or [None]
        return names[0] if config.get("mode") == "ANY" else None

    def thinking_sent(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            ("", part["thoughtSignature"])
            for content in body["contents"]
            for part in content.get("parts") or []
            if "thoughtSignature" in part
        ]


class BedrockProvider(_AnswerProvider):
    name = "bedrock"
    model = BedrockServer.MODEL
    reasoning_model = model

    def __init__(self) -> None:
        self.server = BedrockServer().start()

    def forced_tool(self, body: dict[str, Any]) -> str | None:
        choice = (body.get("toolConfig") or {}).get("toolChoice") or {}
        return (choice.get("tool") or {}).get("name")

    def thinking_sent(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            (reasoning["text"], reasoning["signature"])
            for message in body["messages"]
            for block in message.get("content") or []
            if (reasoning := (block.get("reasoningContent") or {}).get("reasoningText"))
        ]


PROVIDERS: dict[str, type[Provider]] = {
    provider.name: provider
    for provider in (
        OpenAiProvider,
        AnthropicProvider,
        GeminiProvider,
        BedrockProvider,
        LocalProvider,
        CompatibleProvider,
    )
}
