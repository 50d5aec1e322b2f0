"""The model adapters, on litellm.

litellm reads these variables when it is imported, so they are set here, before any module of
this package imports it: the bundled model cost map instead of one fetched over the network
(which fails, after retries, without one), and where tiktoken keeps its encodings (only /tmp is
writable on Lambda; litellm then points it at the encodings it bundles).

litellm is then imported here, with its pydantic models built on first use (issue 31): its
import defines about 1,900 models (its types and the OpenAI SDK's), and pydantic builds each
one's validator as the class is made, though a turn validates a handful of them. Deferred, the
build happens at a model's first validation (pydantic's `defer_build`), which is the same
work for those few and none for the rest: about a fifth of agent_turn's cold start. Only
classes made during this import are deferred; pydantic's default is restored after it.

litellm's debug notes are turned off as it is imported: its red "Provider List: …" banner, which
it prints on its own for a model name without a provider, stood above the project's error (in
`chat` and `doctor`, which check the names before any other module imports the adapter).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "/tmp/tiktoken")  # noqa: S108


@contextmanager
def models_built_on_first_use() -> Iterator[None]:
    """pydantic models defined meanwhile build their validators at their first use."""
    from pydantic import BaseModel

    config = BaseModel.model_config
    before = config.get("defer_build")
    config["defer_build"] = True  # each new model copies its bases' config as it is made
    try:
        yield
    finally:
        if before is None:
            config.pop("defer_build", None)
        else:
            config["defer_build"] = before


with models_built_on_first_use():
    import litellm  # imported once, here, for every module of the package

litellm.suppress_debug_info = True
