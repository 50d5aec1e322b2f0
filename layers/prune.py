"""Remove what a Lambda layer never uses at run time: `python prune.py LAYER_DIR/python`.

Run by `make build-CoreLayer` / `build-LlmLayer` after pip has installed the hashed lock. Lambda
counts a function and all its layers together against 250 MB unzipped, and litellm brings the
admin UI of its proxy server with it. Every entry below is a glob relative to the layer's python/
directory with the reason it is safe. Only data that nothing on our code path reads is removed:
the agent does `import litellm` and `litellm.completion(model=..., api_base=..., messages=...,
tools=...)`, never the proxy server, never a test suite, never a console script.

Deliberately KEPT (do not add them here):
  *.dist-info/METADATA, RECORD...  litellm, openai, huggingface_hub and pydantic read package
                                   versions with importlib.metadata at import time.
  litellm/litellm_core_utils/tokenizers/   the vendored tiktoken rank files: litellm points
                                   TIKTOKEN_CACHE_DIR at them so token counting works offline
                                   (Lambda has no reason to reach the tiktoken CDN).
  litellm/model_prices_and_context_window_backup.json   the local cost map
                                   (LITELLM_LOCAL_MODEL_COST_MAP=True reads it instead of GitHub).
  litellm/proxy/**/*.py            `import litellm` imports parts of litellm.proxy (types, hooks).
  litellm/rust_bridge, tokenizers, hf_xet, tiktoken   compiled extensions imported by litellm or
                                   its dependencies: dropping them is not "safe".
  litellm/llms/**                  every provider: LlmModel is any litellm model string.

Compiled extensions are then stripped of their symbol tables (`strip --strip-unneeded`, as
Debian and conda-forge ship theirs): tokenizers, hf_xet, cryptography, aiohttp, regex and
PyYAML come with them, about 23 MB that only a debugger reads. The dynamic symbols the loader
and Python need stay; none of these wheels was patched by auditwheel (no bundled .libs, no
RPATH), the case where strip is known to break a library. smoke_test.py loads every extension
of the built layers with python3.12 afterwards. Without a GNU or LLVM strip (macOS's own cannot
read Linux ELF files) the step is skipped with a note, and the layers are that much larger.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

PRUNE: tuple[tuple[str, str], ...] = (
    # --- everywhere -----------------------------------------------------------------------------
    (
        "**/__pycache__",
        "bytecode compiled by the build machine's Python, not the runtime's 3.12: Lambda would "
        "ignore it (pip runs with --no-compile; this catches a copied source tree's caches)",
    ),
    (
        "bin",
        "console scripts pip --target writes (litellm, litellm-proxy, hf, httpx, normalizer...): "
        "not on Lambda's PATH and their #! points at the build machine's interpreter",
    ),
    ("**/*.pyi", "type stubs, read only by type checkers"),
    (
        "*.dist-info/sboms",
        "software bills of materials (CycloneDX JSON), read by no code; METADATA stays",
    ),
    (
        "*/tests",
        "test suites shipped inside packages (jsonschema, referencing, fsspec, regex, "
        "jsonschema_specifications): never imported by the package itself",
    ),
    # --- litellm's proxy server: we call the SDK, we never run `litellm --port` ----------------
    (
        "litellm/proxy/_experimental/out",
        "the proxy's admin UI, a prebuilt Next.js site (~18 MB of JS/HTML/fonts) that only "
        "proxy_server.py serves",
    ),
    (
        "litellm/proxy/swagger",
        "Swagger UI JS/CSS the proxy serves at /docs",
    ),
    (
        "litellm/proxy/_lazy_openapi_snapshot.json",
        "the proxy's /openapi.json snapshot; its only reader falls back to placeholders without it",
    ),
)


def prune(root: Path) -> int:
    """Delete every PRUNE match under root; return the number of bytes removed."""
    total = 0
    for pattern, _reason in PRUNE:
        removed = 0
        for path in sorted(root.glob(pattern), key=lambda p: len(p.parts), reverse=True):
            if not path.exists() and not path.is_symlink():
                continue  # inside a directory an earlier match of this pattern removed
            removed += _size(path)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        if removed:
            print(f"  pruned {removed / 1e6:6.1f} MB  {pattern}")
        total += removed
    return total


def strip_extensions(root: Path) -> int:
    """Strip the symbol tables of the compiled extensions under root; return the bytes saved."""
    strip = _binutils_strip()
    if strip is None:
        print("  not stripped: no GNU or LLVM `strip` (binutils) on this machine")
        return 0
    extensions = sorted(path for path in root.rglob("*.so*") if _is_elf(path))
    before = sum(path.stat().st_size for path in extensions)
    if extensions:
        subprocess.run([strip, "--strip-unneeded", *map(str, extensions)], check=True)  # noqa: S603
    saved = before - sum(path.stat().st_size for path in extensions)
    print(f"  stripped {saved / 1e6:5.1f} MB  symbols of {len(extensions)} compiled extensions")
    return saved


def _binutils_strip() -> str | None:
    """The build machine's GNU or LLVM strip on PATH; None for none, or for macOS's own (it has
    no --version and cannot read Linux ELF files)."""
    strip = shutil.which("strip")
    if strip is None:
        return None
    answered = subprocess.run([strip, "--version"], capture_output=True, check=False)  # noqa: S603
    return strip if answered.returncode == 0 else None


def _is_elf(path: Path) -> bool:
    if not path.is_file() or path.is_symlink():
        return False
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"


def _size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(item.lstat().st_size for item in path.rglob("*") if item.is_file())


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not Path(argv[1]).is_dir():
        print("usage: prune.py LAYER_DIR/python", file=sys.stderr)
        return 2
    root = Path(argv[1])
    total = prune(root) + strip_extensions(root)
    print(f"prune.py: removed {total / 1e6:.1f} MB from {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
