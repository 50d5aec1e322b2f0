"""Smoke test of the built layers, loaded as Lambda loads them: `python layers/smoke_test.py`.

`make build-check` runs it after `make build`. The runtime's Python (python3.12) is started with
no site-packages (`-S -s`) and only `build/layers/CoreLayer/python`, `build/layers/LlmLayer/python`
and `build/runtime/python` (boto3, which the runtime provides) on its path, and every connection
beyond 127.0.0.1 refused. In it:

- the handlers (`functions/*/app.py`, as SAM deploys them) are imported: everything they
  import at start-up is in the layers (the console's page too: its files are the package's);
- a completion WITH tools goes through `LitellmChatModel` to the scripted OpenAI-compatible
  stand-in (tests/support/scripted_model.py, served on 127.0.0.1 by this interpreter): the tool
  call and then the reply must parse;
- tokens are counted for the tokenizers litellm picks (o200k_base, cl100k_base, Claude's,
  a llama-3 model) with no download: the encodings ship in the layer;
- every compiled extension in the layers is imported: none was broken by prune.py's strip,
  including those no handler loads at start-up (hf_xet, aiohttp's parsers...);
- a PDF's and a DOCX's text is read by the documents child (`adapters/documents.py`), which
  this python3.12 starts with the layers' path.

Exits 1 with the reason on any failure, including any attempt to reach the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support: the stand-in server and a sample environment
from runtime_python import RUNTIME_NAME, find_runtime_python  # noqa: E402

from tests.support.documents import docx, pdf  # noqa: E402
from tests.support.mcp_server import McpServerProcess  # noqa: E402
from tests.support.scripted_model import ScriptedModelServer  # noqa: E402
from tests.support.settings import AGENT_ENV  # noqa: E402

BUILD = ROOT / "build"
FUNCTIONS = ("webhook", "scheduler", "agent_turn", "sandbox", "console")
# o200k_base, cl100k_base, cl100k_base (unknown model), Claude's bundled JSON, llama-3 (which
# would download a tokenizer from Hugging Face unless litellm_model/ turns that off).
TOKENIZER_MODELS = ("gpt-4o", "gpt-4", "openai/scripted", "claude-sonnet-4-5", "groq/llama-3-70b")
DOCUMENTS = {"pdf": pdf("smoke page"), "docx": docx("smoke paragraph")}

CHILD = r"""
import json, os, sys, time

# Lambda has the internet, but nothing here may need it: record and refuse any other host.
blocked = []
LOOPBACK = ("127.0.0.1", "::1", "localhost")

def refuse_network(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][0] not in LOOPBACK:
        blocked.append(f"connect {args[1][0]}")
        raise OSError("network refused by the smoke test")
    if event == "socket.getaddrinfo" and args[0] not in LOOPBACK:
        blocked.append(f"resolve {args[0]}")
        raise OSError("network refused by the smoke test")

sys.addaudithook(refuse_network)
import importlib.util
from pathlib import Path

result = {"handlers": {}}
modules = {}
for name in json.loads(sys.argv[2]):
    start = time.perf_counter()
    app = Path(sys.argv[1]) / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"{name}_app", app)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    modules[name] = module
    result["handlers"][name] = round((time.perf_counter() - start) * 1000)

import litellm
from nanobot_lambda.adapters.llm.litellm_model import LitellmChatModel
from nanobot_lambda.core.model import CompletionRequest, function_tool
from nanobot_lambda.settings import AgentSettings

model = LitellmChatModel(AgentSettings.from_env())
tools = [function_tool("read_file", "Read a workspace file.", {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
})]
messages = [{"role": "user", "content": "What do my notes say?"}]
first = model.complete(CompletionRequest(messages, tools))
call = first.tool_calls[0]
result["tool_call"] = {"name": call.name, "arguments": json.loads(call.arguments)}
messages += [
    {"role": "assistant", "content": first.content, "tool_calls": [
        {"id": call.id, "type": "function",
         "function": {"name": call.name, "arguments": call.arguments}}]},
    {"role": "tool", "tool_call_id": call.id, "content": "Buy milk."},
]
result["reply"] = model.complete(CompletionRequest(messages, tools)).content

text = [{"role": "user", "content": "Grüße aus Köln, 東京 🚀 tokenization_test(42)"}]
models = json.loads(sys.argv[3])
result["tokens"] = {m: litellm.token_counter(model=m, messages=text) for m in models}
result["tiktoken_cache_dir"] = os.environ.get("TIKTOKEN_CACHE_DIR")
result["litellm_file"] = litellm.__file__
import aws_xray_sdk.core  # the Tracer's provider, for agent_turn and the scheduler
result["xray_file"] = aws_xray_sdk.__file__
import ipaddress
import mcp  # MCP_SERVERS: the SDK's client (and what `import mcp` loads), against a real server
from nanobot_lambda.adapters.mcp.client import McpServer
from nanobot_lambda.adapters.web.netguard import AddressGuard
local = AddressGuard([ipaddress.ip_network("127.0.0.1/32")])
remote = McpServer("smoke", os.environ["SMOKE_MCP_URL"], {}, local)
result["mcp_file"] = mcp.__file__
result["mcp_tools"] = sorted(tool.name for tool in remote.list_tools(30))
result["mcp_call"] = remote.call("add", {"a": 2, "b": 40}, 30).text
sandbox = modules["sandbox"]  # the code sandbox's handler, on python3.12
ran = sandbox.handler({"version": 1, "language": "python", "code": "print(6 * 7)"}, None)
result["sandbox"] = {key: ran.get(key) for key in ("ok", "exit_code", "stdout", "error")}
# A PDF's and a DOCX's text, read in the documents child (this python3.12, the layers' path).
from nanobot_lambda.adapters import documents
samples = json.loads(sys.argv[5])
result["documents"] = {
    kind: getattr(documents.extract(kind, bytes.fromhex(data)), "text", None)
    for kind, data in samples.items()
}
import importlib
result["extensions"], result["extension_failures"] = 0, {}
for layer in map(Path, json.loads(sys.argv[4])):
    for extension in sorted(layer.rglob("*.so")):
        relative = extension.relative_to(layer)
        name = ".".join((*relative.parts[:-1], relative.name.split(".")[0]))
        result["extensions"] += 1
        try:
            importlib.import_module(name)
        except Exception as error:
            result["extension_failures"][name] = f"{type(error).__name__}: {error}"[:300]
result["blocked"] = blocked
print(json.dumps(result))
"""


def fail(reason: str) -> int:
    print(f"smoke_test.py: FAILED: {reason}", file=sys.stderr)
    return 1


def layer_path(build: Path, runtime: Path) -> list[Path]:
    return [
        build / "layers" / "CoreLayer" / "python",
        build / "layers" / "LlmLayer" / "python",
        runtime,
    ]


def run_child(
    python: str, path: list[Path], server: ScriptedModelServer, mcp_url: str
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,  # nothing may be cached outside the layers between runs
            "PYTHONPATH": os.pathsep.join(str(p) for p in path),
            "PYTHONDONTWRITEBYTECODE": "1",  # /opt is read-only on Lambda
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "smoke",
            "AWS_SECRET_ACCESS_KEY": "smoke",
            # agent_turn's import starts reading the workspace (its cold-start prefetch): AWS is
            # a closed port here, so that read fails at once, as an unreachable S3 would, and
            # the import must still succeed.
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
            # As the template sets them for AgentTurnFunction.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "TIKTOKEN_CACHE_DIR": str(Path(home) / "tiktoken"),
            **AGENT_ENV,
            "TELEGRAM_SECRET_TOKEN": "smoke-secret",
            "IDEMPOTENCY_TABLE": "idempotency",
            **server.env(),
            "LLM_NUM_RETRIES": "0",
            "SMOKE_MCP_URL": mcp_url,
            "SANDBOX_ROOT": str(Path(home) / "sandbox"),
        }
        completed = subprocess.run(  # noqa: S603
            [
                python,
                "-S",
                "-s",
                "-c",
                CHILD,
                str(ROOT / "functions"),
                json.dumps(FUNCTIONS),
                json.dumps(TOKENIZER_MODELS),
                json.dumps([str(layer) for layer in path[:2]]),
                json.dumps({kind: data.hex() for kind, data in DOCUMENTS.items()}),
            ],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    if completed.returncode != 0:
        raise RuntimeError(f"exit code {completed.returncode}\n{completed.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def check(result: dict[str, Any], path: list[Path], server: ScriptedModelServer) -> str | None:
    """The reason the built layers fail, or None."""
    if result["blocked"]:
        return f"tried to reach the network: {result['blocked']}"
    if not result["litellm_file"].startswith(str(path[1])):
        return f"litellm came from {result['litellm_file']}, not the LlmLayer"
    if not result["xray_file"].startswith(str(path[0])):
        return f"aws_xray_sdk came from {result['xray_file']}, not the CoreLayer"
    if not result["mcp_file"].startswith(str(path[1])):
        return f"mcp came from {result['mcp_file']}, not the LlmLayer"
    if result["extension_failures"] or not result["extensions"]:
        return f"compiled extensions do not load: {result['extension_failures']}"
    if result["sandbox"] != {"ok": True, "exit_code": 0, "stdout": "42\n", "error": None}:
        return f"the sandbox did not run code: {result['sandbox']}"
    if result["documents"] != {"pdf": "--- page 1 ---\nsmoke page", "docx": "smoke paragraph"}:
        return f"the documents child did not read: {result['documents']}"
    if "add" not in result["mcp_tools"] or result["mcp_call"] != "42":
        return f"the MCP client failed: {result['mcp_tools']}, {result['mcp_call']!r}"
    if result["tool_call"] != {"name": "read_file", "arguments": {"path": "notes.md"}}:
        return f"tool call did not parse: {result['tool_call']}"
    if result["reply"] != "Your notes say: buy milk.":
        return f"unexpected reply: {result['reply']!r}"
    sent_tools = [tool["function"]["name"] for tool in server.requests[0].get("tools", [])]
    if sent_tools != ["read_file"]:
        return f"the tools were not sent: {sent_tools}"
    if server.unexpected or server.remaining:
        return "the model was not called exactly twice"
    if not all(count > 0 for count in result["tokens"].values()):
        return f"token counting failed: {result['tokens']}"
    return None


def main(argv: list[str]) -> int:
    build = Path(argv[1]) if len(argv) > 1 else BUILD
    runtime = Path(argv[2]) if len(argv) > 2 else build / "runtime" / "python"
    path = layer_path(build, runtime)
    missing = [str(p) for p in path if not p.is_dir()]
    if missing:
        return fail(f"missing {missing}: run `make build-check`")
    python = find_runtime_python()
    if python is None:
        return fail(f"no {RUNTIME_NAME} found (set RUNTIME_PYTHON)")
    server = ScriptedModelServer().start()
    # An MCP server on the development environment's Python (its server side is not shipped).
    mcp_server = McpServerProcess().start()
    try:
        server.call_tool("read_file", {"path": "notes.md"}, content="Let me look.")
        server.reply("Your notes say: buy milk.")
        try:
            result = run_child(python, path, server, mcp_server.url)
        except RuntimeError as error:
            return fail(f"the layers did not load or call the model:\n{error}")
        reason = check(result, path, server)
    finally:
        server.stop()
        mcp_server.stop()
    if reason:
        return fail(reason)
    imports = ", ".join(f"{name} {ms} ms" for name, ms in result["handlers"].items())
    print(f"smoke_test.py: OK with {python} and only {build}/ on the path")
    print(f"  handler imports: {imports}")
    print(f"  completion with tools: {result['tool_call']} then {result['reply']!r}")
    print(f"  tokens counted offline: {result['tokens']}")
    print(f"  tiktoken encodings read from {result['tiktoken_cache_dir']}")
    print(
        f"  MCP client: {len(result['mcp_tools'])} tools listed, add(2, 40) = {result['mcp_call']}"
    )
    print(f"  compiled extensions imported: {result['extensions']}")
    print("  PDF and DOCX text read in the documents child")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
