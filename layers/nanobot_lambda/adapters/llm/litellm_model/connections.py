"""litellm's connections and first-use imports, set up and dropped with the container.

A cold start imports at init what the first completion would import on its own; after a SnapStart
restore, the HTTP clients litellm keeps (with the snapshotted machine's sockets) are dropped, so
the next request makes new ones.
"""

from __future__ import annotations

import contextlib
import importlib

import litellm

from nanobot_lambda.adapters.llm.litellm_model.providers import provider_of

# What litellm's first completion imports, imported at init instead: into the snapshot under
# SnapStart, and for keep-warm into the ping's init. httpcore, which httpx imports when litellm
# makes its first HTTP client (about 0.1 s), for every model. The OpenAI SDK's resources (about
# a third of a second) only for the providers litellm reaches through that SDK (OpenAI and its
# compatible servers as `openai/`, Azure): it loads them all at the first `client.chat`. Other
# providers never import them, so importing them at init would only lengthen a cold start.
FIRST_USE_MODULES = ("httpcore",)
OPENAI_SDK_MODULES = ("openai.resources",)
OPENAI_SDK_PROVIDERS = frozenset({"openai", "azure", "text-completion-openai", "azure_text"})


def import_first_use_modules(model: str) -> None:
    """What the first completion of `model` (LLM_MODEL) would import, now."""
    names = list(FIRST_USE_MODULES)
    if provider_of(model) in OPENAI_SDK_PROVIDERS:
        names += OPENAI_SDK_MODULES
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


# litellm's HTTP clients: singletons it makes on first use and keeps in its module (each with
# a pool of open connections), and remakes when the name is missing (litellm/_lazy_imports.py).
_CONNECTION_SINGLETONS = (
    "in_memory_llm_clients_cache",
    "module_level_client",
    "module_level_aclient",
)


def forget_connections() -> list[str]:
    """Drop litellm's HTTP clients (after a SnapStart restore, their sockets are the snapshotted
    machine's): the next request makes new ones. Returns the names that were held."""
    held = vars(litellm)
    return [name for name in _CONNECTION_SINGLETONS if held.pop(name, None) is not None]
