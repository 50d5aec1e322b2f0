"""Time to build the system prompt on a warm turn, by number of workspace skills.

The workspace is in S3 (moto server) and warm: after `refresh()`, unchanged files come from the
container's cache, so this is the framework's own cost (reading cached files, parsing skill
frontmatter, rendering). It should stay small and nearly flat as skills are added.

    make bench            or            .venv/bin/python bench/prompt_build.py
"""

from __future__ import annotations

import statistics
import time

import boto3
from _moto import start_moto

from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.context import ContextBuilder
from nanobot_lambda.core.workspace import seed_workspace

RUNS = 200


def main() -> None:
    server = start_moto()
    try:
        print(f"System prompt build, warm turn (median / p95 of {RUNS})")
        for count in (1, 20, 200):
            bucket = f"bench-prompt-{count}"
            s3 = boto3.client("s3")
            s3.create_bucket(Bucket=bucket)
            store = S3Workspace(bucket, s3)
            seed_workspace(store)
            for n in range(count):
                body = f"---\nname: extra-{n:03d}\ndescription: Chores of kind {n}.\n---\n# {n}\n"
                store.write(f"skills/extra-{n:03d}/SKILL.md", body.encode())
            store.refresh()
            builder = ContextBuilder({})
            builder.system_prompt(store)  # the cold turn fills the cache
            times = []
            for _ in range(RUNS):
                start = time.perf_counter()
                builder.system_prompt(store)
                times.append((time.perf_counter() - start) * 1000)
            p95 = sorted(times)[int(RUNS * 0.95)]
            print(f"  {count:>3} skills: {statistics.median(times):6.2f} ms / {p95:6.2f} ms")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
