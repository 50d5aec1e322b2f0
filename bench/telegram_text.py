"""Time to render and split a long answer for Telegram, and to parse the result back.

A model can answer at length: rendering Markdown to Telegram HTML, splitting it under 4,096
characters without breaking tags, and the local Bot API's parse of each chunk must stay linear.

    make bench            or            .venv/bin/python bench/telegram_text.py
"""

from __future__ import annotations

import statistics
import time

from nanobot_lambda.adapters.telegram.formatting import (
    markdown_to_telegram_html,
    split_telegram_html,
)
from nanobot_lambda.adapters.telegram.html_check import parse_telegram_html

RUNS = 5


def timed(action: object, *arguments: object) -> float:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        action(*arguments)  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    print(f"Telegram text handling (median of {RUNS}, ms)")
    print(f"{'input':>10} {'render':>8} {'split':>8} {'parse':>8}")
    for kilobytes in (10, 100, 1000):
        markdown = "Some **text** with & and <b> and 😀.\n\n" * (kilobytes * 1000 // 40)
        html = markdown_to_telegram_html(markdown)
        print(
            f"{kilobytes:>7} KB {timed(markdown_to_telegram_html, markdown):>8.1f}"
            f" {timed(split_telegram_html, html):>8.1f} {timed(parse_telegram_html, html):>8.1f}"
        )


if __name__ == "__main__":
    main()
