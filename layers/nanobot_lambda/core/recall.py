"""Recall beyond grep: the few HISTORY entries most relevant to the user's message, by BM25.

No external service: the entries of HISTORY.md and its archives are tokenised once per file
version (cached by ETag in the container) and scored against the message. Only entries that
share a meaningful word with the message score at all; when none does, nothing is added, so the
usual turn costs no extra tokens. What is added is bounded by `max_chars`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from nanobot_lambda.core.memory import HistoryEntry, history_files, split_entries
from nanobot_lambda.core.ports import Workspace
from nanobot_lambda.core.workspace import NotText

K1 = 1.5
B = 0.75
_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to mean anything in a personal log (English; other languages pass through).
_STOPWORDS = frozenset(
    """a about after again all also am an and any are as at be been before being but by can
    could did do does doing done for from had has have having he her here hers him his how i if
    in into is it its just me more most my no not now of off on once only or other our out over
    own same she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom why
    will with would you your yours yes ok okay please thanks thank hi hello hey""".split()  # noqa: SIM905
)


# Chinese, Japanese and Korean runs have no spaces between words: they are indexed as
# overlapping character pairs. A lone character stays a token, unless it is kana (particles).
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_KANA = re.compile(r"[\u3040-\u30ff]")


def tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    for word in _WORD.findall(text.casefold()):
        for run in _CJK.findall(word):
            if len(run) > 1:
                tokens += [run[i : i + 2] for i in range(len(run) - 1)]
            elif not _KANA.match(run):
                tokens.append(run)
        tokens += [
            part
            for part in _CJK.sub(" ", word).split()
            if len(part) > 1 and part not in _STOPWORDS and not part.isdigit()
        ]
    return tokens


@dataclass(frozen=True)
class _Indexed:
    entry: HistoryEntry
    terms: Counter[str]
    length: int


class HistoryRecall:
    """Per-container index of the history files, refreshed by ETag."""

    def __init__(self, workspace: Workspace, *, limit: int = 3, max_chars: int = 1200) -> None:
        self._workspace = workspace
        self._limit = limit
        self._max_chars = max_chars
        self._files: dict[str, tuple[str, list[_Indexed]]] = {}  # path -> (etag, entries)

    def _index(self) -> list[_Indexed]:
        indexed: list[_Indexed] = []
        for path in history_files(self._workspace):
            file = self._workspace.read(path)
            if file is None:
                continue
            cached = self._files.get(path)
            if cached is None or cached[0] != file.etag:
                try:
                    entries = split_entries(file.text, path)
                except NotText:
                    entries = []
                items = []
                for entry in entries:
                    terms = tokenize(entry.text)
                    items.append(_Indexed(entry, Counter(terms), len(terms)))
                cached = (file.etag, items)
                self._files[path] = cached
            indexed.extend(cached[1])
        return indexed

    def search(self, query: str, shown: str = "") -> list[str]:
        """The most relevant entries' texts, best first, within the character budget; an entry
        whose text is in `shown` (the runtime blocks the request already sends) is not repeated."""
        if self._max_chars <= 0:
            return []
        wanted = set(tokenize(query))
        if not wanted:
            return []
        documents = self._index()
        if not documents:
            return []
        average = sum(document.length for document in documents) / len(documents) or 1.0
        frequency = Counter(
            term for document in documents for term in wanted & document.terms.keys()
        )
        scored = []
        for position, document in enumerate(documents):
            if document.entry.text in shown:
                continue
            score = 0.0
            for term in wanted & document.terms.keys():
                idf = math.log(
                    (len(documents) - frequency[term] + 0.5) / (frequency[term] + 0.5) + 1
                )
                count = document.terms[term]
                norm = count + K1 * (1 - B + B * document.length / average)
                score += idf * count * (K1 + 1) / norm
            if score > 0:
                scored.append((score, position, document.entry.text))
        scored.sort(key=lambda item: (-item[0], -item[1]))  # ties: the newer entry first
        chosen: list[str] = []
        budget = self._max_chars
        for _, _, text in scored[: self._limit]:
            shown = text if len(text) <= budget else text[: max(0, budget - 1)] + "…"
            if budget <= 40:
                break
            chosen.append(shown)
            budget -= len(shown)
        return chosen
