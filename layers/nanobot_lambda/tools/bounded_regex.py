"""Regular expressions from the model, with a bound on what one search can cost.

Python's `re` backtracks and has no timeout, and a search cannot be interrupted from another
thread, so `grep` bounds the cost before it searches:

- patterns longer than `MAX_PATTERN_CHARS` are refused;
- patterns whose backtracking can grow exponentially are refused with a hint: a repetition of
  something that can match in more than one way, i.e. nested quantifiers (`(a+)+`, `(\\w+\\s?)*`)
  or an alternation whose branches may start alike (`(a|ab)*`), and backreferences;
- what is left backtracks polynomially: at each start position, at most the product of how
  many lengths each repetition can take. `bound` estimates that product and shortens the part
  of each line searched (never below `MIN_SEARCHED_CHARS`) until one line costs at most
  `STEP_BUDGET` steps (a quarter of a second at worst); patterns that cannot fit are refused.

The caller adds a wall-clock limit between lines, so a whole search is bounded too.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_PATTERN_CHARS = 300
STEP_BUDGET = 10_000_000  # estimated steps per line: at most about 0.25 s (bench/grep_bound.py)
MIN_SEARCHED_CHARS = 100

# The parser behind `re` (re._parser; `sre_parse` is its deprecated alias). It has no stubs.
_parser: Any = importlib.import_module("re._parser")
_SIMPLE = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN", "AT", "CATEGORY", "RANGE", "NEGATE"})
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


class PatternRefused(ValueError):
    """A pattern too costly to run. The message is for the model."""


@dataclass(frozen=True)
class BoundedRegex:
    regex: re.Pattern[str]
    searched_chars: int  # how much of each line a search looks at


def bound(pattern: str, flags: int, max_line_chars: int) -> BoundedRegex:
    """Compile `pattern` (re.error for invalid ones) with the line width its cost allows."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternRefused(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    regex = re.compile(pattern, flags)
    parsed = _parser.parse(pattern, flags)
    ignore_case = bool(flags & re.IGNORECASE)

    def affordable(width: int) -> bool:
        return width * _cost(parsed, width, ignore_case) <= STEP_BUDGET

    if not affordable(MIN_SEARCHED_CHARS):
        raise PatternRefused(
            "the pattern has too many open-ended repetitions (like .* or \\w+) to search "
            "in bounded time; use fewer, or bounded ones like .{0,80}"
        )
    low, high = MIN_SEARCHED_CHARS, max_line_chars  # the widest affordable width (cost grows)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if affordable(middle) else (low, middle - 1)
    return BoundedRegex(regex, low)


def _cost(items: Any, width: int, ignore_case: bool) -> int:
    """Worst-case steps for a sequence to match at one position of a `width`-character line:
    the product of its items' costs, except that a repetition of one character class followed
    by a character the class cannot match (`\\w+@`) can stop at one length only, so it adds
    its scan instead of multiplying."""
    items = list(items)
    rest = 1
    for index in range(len(items) - 1, -1, -1):
        op, value = items[index]
        following = items[index + 1] if index + 1 < len(items) else None
        if _stops_before(str(op), value, following, ignore_case):
            rest = width + rest
        else:
            rest = _item_cost(str(op), value, width, ignore_case) * rest
    return rest


def _stops_before(op: str, value: Any, following: Any, ignore_case: bool) -> bool:
    if op not in _REPEATS or value[1] <= 1 or following is None:
        return False
    body = list(value[2])
    if len(body) != 1 or str(following[0]) != "LITERAL":
        return False
    char = chr(following[1])
    candidates = {char, char.lower(), char.upper()} if ignore_case else {char}
    return not any(_may_match(str(body[0][0]), body[0][1], c) for c in candidates)


def _may_match(op: str, value: Any, char: str) -> bool:
    """Whether a one-character item can match `char` (True when unsure)."""
    if op == "LITERAL":
        return chr(value) == char
    if op == "NOT_LITERAL":
        return chr(value) != char
    if op == "CATEGORY":
        return _in_category(str(value), char)
    if op == "IN":
        negate = bool(value) and str(value[0][0]) == "NEGATE"
        members = value[1:] if negate else value
        found = any(_member_matches(str(kind), item, char) for kind, item in members)
        return found != negate or any(str(kind) not in _CLASS_MEMBERS for kind, _ in members)
    return True


_CLASS_MEMBERS = frozenset({"LITERAL", "RANGE", "CATEGORY"})
_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdecimal,
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_WORD": lambda char: char.isalnum() or char == "_",
}


def _in_category(category: str, char: str) -> bool:
    negated = category.startswith("CATEGORY_NOT_")
    test = _CATEGORIES.get(category.replace("CATEGORY_NOT_", "CATEGORY_"))
    if test is None:
        return True
    return test(char) != negated


def _member_matches(kind: str, item: Any, char: str) -> bool:
    if kind == "LITERAL":
        return chr(item) == char
    if kind == "RANGE":
        return bool(item[0] <= ord(char) <= item[1])
    if kind == "CATEGORY":
        return _in_category(str(item), char)
    return True


def _item_cost(op: str, value: Any, width: int, ignore_case: bool) -> int:
    if op in _SIMPLE:
        return 1
    if op in ("GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE"):
        raise PatternRefused(
            "backreferences (\\1, (?P=name), (?(1)…)) are not supported in grep patterns"
        )
    if op == "SUBPATTERN":
        return _cost(value[-1], width, ignore_case)
    if op in ("ASSERT", "ASSERT_NOT"):
        return _cost(value[1], width, ignore_case)
    if op == "ATOMIC_GROUP":
        return _cost(value, width, ignore_case)
    if op == "BRANCH":
        branches = value[1]
        costs = [_cost(branch, width, ignore_case) for branch in branches]
        # Branches that start with distinct characters: at most one can match at a position.
        return max(costs) if _start_apart(branches, ignore_case) else sum(costs)
    if op in _REPEATS:
        low, high, body = value
        body_cost = _cost(body, width, ignore_case)
        body_low = body.getwidth()[0]
        # A body with one way to match where it starts (cost 1) repeats in one way too.
        if high > 1 and body_cost > 1:
            raise PatternRefused(
                "the pattern repeats something that can match in more than one way (nested "
                "quantifiers like (a+)+ or alternatives like (a|ab)*), which can take "
                "exponential time; rewrite it (e.g. [\\w\\s]+ instead of (\\w+\\s?)+) or set "
                "literal=true"
            )
        if high <= 1:
            return body_cost + 1
        counts = int(min(high, width // max(body_low, 1)) - low + 1)
        return max(counts, 1) * body_cost
    return width  # an operation this estimate does not know: assume the worst linear factor


def _start_apart(branches: Any, ignore_case: bool) -> bool:
    firsts = []
    for branch in branches:
        if not len(branch) or str(branch[0][0]) != "LITERAL":
            return False
        char = chr(branch[0][1])
        firsts.append(char.lower() if ignore_case else char)
    return len(set(firsts)) == len(firsts)
