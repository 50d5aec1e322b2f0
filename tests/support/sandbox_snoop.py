"""Code for the sandbox that looks for credentials everywhere it might read them, and what it
found. The planted values are written into the code in two halves joined only when it runs, so
the code's own text (in the request, in the runner's memory) never holds them whole: a value
found is one the code read from somewhere else.

It reads its environment, /proc/self/environ, and for every process it can list (its parent
and ancestors first): environ, cmdline, maps, every task's environ, and mem (at the regions
maps names, or at least opening it); then the files it is told to try. It prints one JSON
line: {"tried": how many places, "opened": what opened (command lines, open to every process by
design, left out), "found": where a planted value was read, "pids": how many processes it
listed, "ancestors": its parent, grandparent... up to init}.
"""

from __future__ import annotations

import json

SNOOP = r"""
import json, os, sys
halves = json.loads(sys.argv[1] if len(sys.argv) > 1 else HALVES)
secrets = [(first + second).encode() for first, second in halves]
files = FILES
tried, opened, found = [], [], []

def look(where, data):
    opened.append(where)
    for secret in secrets:
        if secret in data:
            found.append(where)

def read(path, limit=1 << 20):
    tried.append(path)
    try:
        with open(path, "rb") as stream:
            look(path, stream.read(limit))
    except OSError:
        pass

def read_memory(pid):
    path = f"/proc/{pid}/mem"
    tried.append(path)
    try:
        memory = open(path, "rb")
    except OSError:
        return
    opened.append(path + " (opened)")
    regions = []
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                span, perms = line.split()[:2]
                if perms.startswith("r"):
                    start, end = (int(part, 16) for part in span.split("-"))
                    regions.append((start, min(end, start + (64 << 20))))
    except OSError:
        pass
    with memory:
        for start, end in regions:
            try:
                memory.seek(start)
                look(f"{path} at {start:#x}", memory.read(end - start))
            except (OSError, ValueError, OverflowError):
                pass

look("os.environ", "\0".join(f"{k}={v}" for k, v in os.environ.items()).encode())
read("/proc/self/environ")
ancestors, pid = [], os.getppid()
while pid > 1:
    ancestors.append(pid)
    try:
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
others = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
pids = ancestors + [1] + [pid for pid in others if pid not in ancestors and pid != 1]
for pid in pids:
    if pid == os.getpid():
        continue
    for part in ("environ", "cmdline", "maps"):
        read(f"/proc/{pid}/{part}")
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tasks = []
    for task in tasks:
        read(f"/proc/{pid}/task/{task}/environ")
    if pid in ancestors:
        read_memory(pid)
for path in files:
    read(path)
# Command lines are open to every process on the machine by design: left out of the list.
private = [where for where in opened if not where.endswith("/cmdline")]
print(json.dumps({"tried": len(tried), "opened": private[:100], "found": found,
                  "pids": len(pids), "ancestors": ancestors}))
"""


def snoop_code(secrets: list[str], files: list[str]) -> str:
    """Python code for the sandbox that looks for `secrets` in every place it can read and
    in `files`, and prints what it found (see the module's docstring)."""
    halves = [[secret[: len(secret) // 2], secret[len(secret) // 2 :]] for secret in secrets]
    return f"HALVES = {json.dumps(json.dumps(halves))!s}\nFILES = {files!r}\n{SNOOP}"


def snoop_report(stdout: str) -> dict[str, object]:
    """The JSON line the snoop printed (the last line of its output)."""
    report: dict[str, object] = json.loads(stdout.strip().splitlines()[-1])
    return report
