"""A stand-in embedding model: OpenAI's /v1/embeddings on 127.0.0.1, deterministic, offline.

litellm talks to it over real HTTP (`EMBEDDING_MODEL=openai/text-embedding-3-small`,
`EMBEDDING_API_BASE=<base_url>`). What it computes is no language model: each word is folded
to a crude stem, mapped through `CONCEPTS` (groups of related words, written by hand for these
tests and bench/recall.py: "tooth" and "dentist" fall in one group), and the concepts and the
character trigrams of the words are hashed into `DIMENSIONS` signed features. Texts that share
concepts therefore point the same way even when they share no word, which is what recall needs
to be tested with; but it knows only the groups below, so its figures show the machinery works,
not what a real model scores (bench/recall.py says so in its output).

`fail_next` makes the next requests answer 500; `requests` records each request's inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import threading
from base64 import b64encode
from typing import Any

from nanobot_lambda.operator.local.http import JsonHttpServer

DIMENSIONS = 256
MODEL = "openai/text-embedding-3-small"  # litellm prices it ($0.02 per million tokens)
CONCEPT_WEIGHT = 2.5  # a word of a known group counts this much more than another word
TRIGRAM_WEIGHT = 0.25

# Groups of words a reader would take as talking about the same thing.
CONCEPTS: tuple[str, ...] = (
    "dentist tooth teeth dental filling cavity orthodontist braces molar gum",
    "doctor physician gp clinic checkup medical appointment surgery surgeon nurse hospital",
    "allergy allergic intolerant intolerance reaction hives epipen anaphylaxis",
    "peanut nut nuts cashew almond walnut hazelnut",
    "shellfish shrimp prawn lobster crab oyster mussel",
    "lactose dairy milk cheese yogurt cream butter",
    "gluten wheat bread pasta flour coeliac celiac",
    "vegetarian vegan meat plant-based tofu",
    "medication medicine pill pills tablet prescription dose drug pharmacy ibuprofen insulin",
    "blood pressure hypertension cardiologist heart",
    "eye eyes glasses optician spectacles lenses contact vision ophthalmologist",
    "sleep insomnia bedtime nap tired rest",
    "run running jog jogging marathon race 10k sprint",
    "gym workout exercise fitness training weights lift lifting trainer",
    "yoga pilates stretch stretching meditation mindfulness",
    "swim swimming pool lap laps",
    "bike bicycle cycling cycle ride",
    "car vehicle auto automobile sedan hatchback suv",
    "mechanic garage service oil tyre tire brake repair inspection mot",
    "insurance insurer policy premium coverage claim",
    "rent lease landlord apartment flat tenancy tenant",
    "mortgage loan bank interest rate lender",
    "tax taxes irs hmrc return deduction accountant",
    "salary pay raise paycheck wage income bonus",
    "budget spending savings save saving money expenses",
    "job work career employer office company boss manager colleague coworker promotion",
    "interview hiring recruiter application cv resume",
    "meeting call standup sync conference presentation deadline",
    "project launch release roadmap milestone sprint",
    "wife husband spouse partner girlfriend boyfriend",
    "mother mom mum mama",
    "father dad papa",
    "sister brother sibling siblings",
    "son daughter kid kids child children",
    "grandmother grandma granny grandfather grandpa grandparents",
    "friend friends buddy pal mate",
    "birthday born anniversary celebration party",
    "wedding marriage married engaged engagement bride groom",
    "dog puppy pup canine",
    "cat kitten feline",
    "vet veterinarian vaccination vaccine shots",
    "fish aquarium goldfish",
    "plant plants garden gardening tomato tomatoes basil herbs watering",
    "flight fly plane airport airline boarding",
    "trip travel vacation holiday journey getaway visit",
    "hotel hostel airbnb stay accommodation booking reservation",
    "passport visa embassy citizenship",
    "train railway rail station",
    "paris france french",
    "japan tokyo kyoto japanese",
    "italy rome italian florence milan",
    "spain madrid barcelona spanish",
    "lisbon portugal portuguese porto",
    "germany berlin german munich",
    "london uk britain british england",
    "new york nyc manhattan brooklyn",
    "beach sea ocean coast seaside surf",
    "mountain mountains hike hiking trail summit climbing ski skiing snowboard",
    "book books novel reading read author library",
    "movie movies film films cinema",
    "series show tv episode season netflix",
    "music song songs band concert album playlist guitar piano singer",
    "cook cooking recipe recipes bake baking kitchen chef dinner lunch breakfast meal",
    "restaurant cafe bistro eatery diner",
    "coffee espresso latte cappuccino caffeine",
    "tea matcha chai",
    "wine beer alcohol drink drinks cocktail",
    "chocolate dessert sweets cake candy sugar",
    "spicy chili hot pepper curry",
    "language spanish lesson lessons course class tutor learn learning study",
    "school university college degree exam exams graduation",
    "computer laptop pc macbook",
    "phone smartphone iphone android mobile",
    "password login account credentials",
    "internet wifi router broadband",
    "electricity power utility bill bills energy gas heating",
    "water leak plumber plumbing pipe boiler",
    "house home household",
    "move moving relocate relocation movers",
    "furniture sofa couch table chair desk bed",
    "clean cleaning cleaner housekeeper laundry",
    "package parcel delivery shipping courier",
    "gift present presents",
    "shoe shoes sneakers boots",
    "size clothes clothing shirt jacket dress trousers jeans",
    "color colour favourite favorite blue green red",
    "morning early dawn sunrise",
    "evening night late",
    "weekend saturday sunday",
    "monday tuesday wednesday thursday friday weekday",
    "january february march april may june july august september october november december",
    "subscription membership subscribe renew renewal cancel",
    "doctor's prescription refill",
    "hair haircut barber hairdresser salon",
    "therapist therapy counselling counseling psychologist",
    "volunteer volunteering charity donate donation",
    "church temple mosque religious",
    "podcast podcasts episode",
    "game games gaming chess board",
    "football soccer team match stadium",
    "tennis racket court",
    "photo photos photography camera",
    "painting paint art drawing draw museum gallery",
    "neighbor neighbour next-door",
    "key keys lock locksmith spare",
    "license licence driving driver",
    "parking park permit",
    "receipt invoice refund return",
    "noise loud quiet",
    "cold flu fever sick ill illness cough",
    "pregnant pregnancy baby due",
    "retire retirement pension",
    "stock stocks shares invest investing investment portfolio crypto bitcoin",
    "credit card debit visa mastercard",
    "lunchbox packed",
    "allergies hayfever pollen",
)
_STOP = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been am
    do does did have has had i me my we our you your he she it they them his her its their
    this that these those what which who when where why how will would can could should
    about any some there here not no yes so than then too very just also into over after
    before again ever""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")


def _stem(word: str) -> str:
    for suffix in ("'s", "ies", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


_CONCEPT_OF: dict[str, int] = {}
for _number, _group in enumerate(CONCEPTS):
    for _member in _group.split():
        _CONCEPT_OF.setdefault(_member, _number)
        _CONCEPT_OF.setdefault(_stem(_member), _number)


def _feature(name: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little") % dims, 1.0 if digest[4] & 1 else -1.0


def embed(text: str, dims: int = DIMENSIONS) -> list[float]:
    """The stand-in's unit vector for `text` (see the module's docstring)."""
    vector = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        if word in _STOP or word.isdigit():
            continue
        stem = _stem(word)
        concept = _CONCEPT_OF.get(word, _CONCEPT_OF.get(stem))
        if concept is not None:
            slot, sign = _feature(f"c:{concept}", dims)
            vector[slot] += sign * CONCEPT_WEIGHT
        else:
            slot, sign = _feature(f"w:{stem}", dims)
            vector[slot] += sign
        padded = f"#{stem}#"
        for start in range(len(padded) - 2):
            slot, sign = _feature(f"t:{padded[start : start + 3]}", dims)
            vector[slot] += sign * TRIGRAM_WEIGHT
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return [value / norm for value in vector]


class EmbeddingServer(JsonHttpServer):
    MODEL = MODEL

    def __init__(self, dims: int = DIMENSIONS) -> None:
        super().__init__()
        self.dims = dims
        self.requests: list[list[str]] = []
        self.failures = 0  # the next requests that get a 500
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def env(self) -> dict[str, str]:
        return {"EMBEDDING_MODEL": self.MODEL, "EMBEDDING_API_BASE": self.base_url}

    def fail_next(self, times: int = 1) -> EmbeddingServer:
        self.failures += times
        return self

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        if method != "POST" or not path.rstrip("/").endswith("/embeddings"):
            return 404, {"error": {"message": f"no route {method} {path}"}}
        request = json.loads(body or b"{}")
        inputs = request.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        with self._lock:
            self.requests.append([str(text) for text in texts])
            if self.failures:
                self.failures -= 1
                return 500, {"error": {"message": "stand-in failure", "type": "server_error"}}
        dims = int(request.get("dimensions") or self.dims)
        base64 = request.get("encoding_format") == "base64"  # the OpenAI SDK's default
        tokens = sum(len(str(text).split()) for text in texts)
        return 200, {
            "object": "list",
            "model": str(request.get("model", "")),
            "data": [
                {"object": "embedding", "index": number, "embedding": _encoded(text, dims, base64)}
                for number, text in enumerate(texts)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _encoded(text: object, dims: int, base64: bool) -> list[float] | str:
    """As OpenAI sends it: a list of floats, or with `encoding_format: base64` their float32
    little-endian bytes in base64."""
    vector = embed(str(text), dims)
    if not base64:
        return vector
    return b64encode(struct.pack(f"<{dims}f", *vector)).decode()
