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
from collections.abc import Callable, Iterable, Sequence

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
        if word.isascii():  # the usual word: no CJK run to look for
            if len(word) > 1 and word not in _STOPWORDS and not word.isdigit():
                tokens.append(word)
            continue
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


class Bm25:
    """BM25 over a fixed list of texts, with an inverted index: a query costs in proportion to
    the postings of its words, not to the number of texts (10,000 chunks stay fast)."""

    def __init__(
        self, texts: Sequence[str], terms_of: Callable[[str], Counter[str]] | None = None
    ) -> None:
        """`terms_of`: a text's terms (default: `tokenize`d and counted), e.g. from a cache
        that keeps them across rebuilds."""
        self.texts = list(texts)
        self._lengths: list[int] = []
        self._postings: dict[str, list[tuple[int, int]]] = {}  # term -> [(text, count)]
        count_terms = terms_of or (lambda text: Counter(tokenize(text)))
        for position, text in enumerate(self.texts):
            terms = count_terms(text)
            self._lengths.append(sum(terms.values()))
            for term, count in terms.items():
                self._postings.setdefault(term, []).append((position, count))
        self._average = (sum(self._lengths) / len(self._lengths) if self._lengths else 0) or 1.0

    def ranked(self, query: str) -> list[tuple[float, int]]:
        """(score, position) of every text sharing a meaningful word with `query`, best first;
        ties: the later text (the newer entry) first."""
        scores: dict[int, float] = {}
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self._idf(term)
            for position, count in postings:
                norm = count + K1 * (1 - B + B * self._lengths[position] / self._average)
                scores[position] = scores.get(position, 0.0) + idf * count * (K1 + 1) / norm
        return sorted(
            ((score, position) for position, score in scores.items()),
            key=lambda item: (-item[0], -item[1]),
        )

    def shares(self, query: str) -> list[tuple[float, int]]:
        """As `ranked`, each score as a share of the query: divided by what a text of average
        length holding each of the query's words once would score (the sum of their idf, a word
        no text holds included). About 1 for a text holding all of the query, less the less of
        it (by weight: a rare word counts more) it holds; a little over 1 for a short text."""
        whole = sum(self._idf(term) for term in set(tokenize(query)))
        return [(score / whole, position) for score, position in self.ranked(query)]

    def _idf(self, term: str) -> float:
        held = len(self._postings.get(term, ()))
        return math.log((len(self.texts) - held + 0.5) / (held + 0.5) + 1)


def fit_budget(texts: Iterable[str], limit: int, max_chars: int) -> list[str]:
    """The first `limit` texts within `max_chars` together (the last one cut with "…" when
    more than 40 characters remain for it)."""
    chosen: list[str] = []
    budget = max_chars
    for text in texts:
        if len(chosen) >= limit or budget <= 40:
            break
        shown = text if len(text) <= budget else text[: max(0, budget - 1)] + "…"
        chosen.append(shown)
        budget -= len(shown)
    return chosen


class HistoryRecall:
    """Per-container index of the history files of the workspace each call names (a job's
    scope's), refreshed by ETag."""

    def __init__(self, *, limit: int = 3, max_chars: int = 1200) -> None:
        self._limit = limit
        self._max_chars = max_chars
        self._files: dict[str, tuple[str, list[HistoryEntry]]] = {}  # path -> (etag, entries)
        self._bm25: tuple[tuple[str, ...], Bm25] | None = None  # (the files' ETags, index)

    def entries(self, workspace: Workspace) -> tuple[tuple[str, ...], list[HistoryEntry]]:
        """(the history files' ETags, their entries oldest first); only a file whose ETag
        changed is read and split again."""
        etags: list[str] = []
        entries: list[HistoryEntry] = []
        for path in history_files(workspace):
            file = workspace.read(path)
            if file is None:
                continue
            cached = self._files.get(path)
            if cached is None or cached[0] != file.etag:
                try:
                    cached = (file.etag, split_entries(file.text, path))
                except NotText:
                    cached = (file.etag, [])
                self._files[path] = cached
            etags.append(file.etag)
            entries.extend(cached[1])
        return tuple(etags), entries

    def search(self, workspace: Workspace, query: str, shown: str = "") -> list[str]:
        """The most relevant entries' texts, best first, within the character budget; an entry
        whose text is in `shown` (the runtime blocks the request already sends) is not repeated."""
        if self._max_chars <= 0 or not tokenize(query):
            return []
        etags, entries = self.entries(workspace)
        if self._bm25 is None or self._bm25[0] != etags:
            self._bm25 = (etags, Bm25([entry.text for entry in entries]))
        texts = self._bm25[1].texts
        ranked = (texts[position] for _, position in self._bm25[1].ranked(query))
        return fit_budget(
            (text for text in ranked if text not in shown), self._limit, self._max_chars
        )
