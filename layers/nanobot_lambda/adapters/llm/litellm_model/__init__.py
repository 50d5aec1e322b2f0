"""`ChatModel` on litellm: any provider litellm supports, chosen by `LLM_MODEL`.

Importing this package imports litellm (about 3 s), so only agent_turn does, in its init phase.
Failures that may pass (429, 5xx, time-outs, lost connections) are retried
(`LLM_NUM_RETRIES`, with a doubling pause); when the retries are spent, the fallback models
(`LLM_FALLBACK_MODELS`) are tried in order. Credentials go only to the provider
they belong to: a fallback of another provider never receives `LLM_API_KEY`.

Given `on_text`, a completion is streamed: a failure to open the stream is retried like any
other, a stream that breaks midway (or ends without a finish_reason) is retried whole, and
the time budget is checked between chunks. A stream is complete when the provider said so (a
chunk of its own with a finish reason), whatever litellm makes of it (`ProviderEnding`).

`reasoning_effort` ("off", "low", "medium", "high"; None: the provider's default) becomes
litellm's `reasoning_effort`, which each provider's translation turns into its own setting
(Anthropic's and Bedrock's thinking budget, Gemini's thinkingConfig, OpenAI's reasoning_effort);
see `reasoning_options` for what "off" is per provider and where litellm needs help. Thinking
comes back apart from the text (`reasoning_content`, `thinking_blocks` with their signatures;
Gemini's thought signature rides in the tool call's id) and never reaches `on_text`.

Claude models (Anthropic, Bedrock, Vertex, OpenRouter) cache a prompt prefix only where the
request says so, so each request to one carries cache breakpoints (`mark_cache_breakpoints`):
after the system prompt, at the end of the history and on the last message. The history is sent
byte for byte as before (`core/context.py`), so a warm turn reads nearly all its input from the
cache; the tokens read show as cached tokens in the usage.

One concern a module:
- chat_model.py: `LitellmChatModel`, the composition: fallbacks, call options, the reply;
- retries.py: the attempts of one model;
- streaming.py: a streamed completion read to its end;
- reasoning.py: a reasoning effort as litellm's options for a model;
- prompt_cache.py: Claude's cache breakpoints;
- connections.py: what the first completion imports, and litellm's HTTP clients dropped;
- providers.py: which provider a model name belongs to.
"""

import logging

# The llm package's __init__ has imported litellm with its offline options (the bundled cost
# map, tiktoken's bundled encodings), its pydantic models built on first use and its debug
# notes off.
import litellm

litellm.drop_params = True  # a setting a provider does not support is dropped, not an error
# Counting tokens for a llama or cohere model would download its tokenizer from Hugging Face at
# run time; the bundled tiktoken encodings count it offline (layers/smoke_test.py checks).
litellm.disable_hf_tokenizer_download = True
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "openai"):
    logging.getLogger(_name).setLevel(logging.WARNING)

from nanobot_lambda.adapters.llm.litellm_model.chat_model import LitellmChatModel  # noqa: E402
from nanobot_lambda.adapters.llm.litellm_model.connections import (  # noqa: E402
    forget_connections,
    import_first_use_modules,
)
from nanobot_lambda.adapters.llm.litellm_model.providers import provider_of  # noqa: E402

__all__ = ["LitellmChatModel", "forget_connections", "import_first_use_modules", "provider_of"]
