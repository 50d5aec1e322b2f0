"""Shortening text for the model by its middle: the start and the end are kept.

The end matters as much as the start: a tool result framed as untrusted data (tools/web.py
`frame`) closes its frame on its last line, and a program's traceback is the end of its output.
Every cut of a tool result goes through here, so a framed result keeps its frame whole.
"""

from __future__ import annotations

from collections.abc import Callable


def keep_head_and_tail(
    text: str, max_chars: int, marker: Callable[[int], str], tail_share: float = 0.5
) -> str:
    """`text` if it fits in `max_chars`, else its start and its end around `marker(n)` (n: the
    characters left out), `tail_share` of what is kept from the end; never over `max_chars`."""
    if len(text) <= max_chars:
        return text
    # The marker's longest form (n has at most as many digits as len(text)) sets the budget.
    kept = max_chars - len(marker(len(text)))
    if kept <= 0:
        return marker(len(text))[:max_chars]
    tail = int(kept * tail_share)
    head = kept - tail
    return text[:head] + marker(len(text) - kept) + (text[len(text) - tail :] if tail else "")
