"""The model adapters, on litellm.

litellm reads these variables when it is imported, so they are set here, before any module of
this package imports it: the bundled model cost map instead of one fetched over the network
(which fails, after retries, without one), and where tiktoken keeps its encodings (only /tmp is
writable on Lambda; litellm then points it at the encodings it bundles).
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "/tmp/tiktoken")  # noqa: S108
