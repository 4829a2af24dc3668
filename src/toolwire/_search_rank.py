"""Ranking for tool search: a model asks for the tools matching a few words and gets the best
few tool names back, so a large tool set need not be sent to it whole.

Okapi BM25 over each tool's words, standard library only: the ranking must be deterministic,
cheap to build for a few thousand tools and fast to query, with nothing to install or train.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
import unicodedata
from collections.abc import Iterable

__all__ = ["QUERY_LIMIT", "STOP_WORDS", "ToolIndex", "words"]

QUERY_LIMIT = 1000
"""Characters of a query that are read; the rest is cut, so a hostile query stays cheap."""

STOP_WORDS = (
    "a", "an", "the", "of", "to", "for", "and", "or", "in", "on", "by", "with", "is", "are",
    "be", "this", "that", "it", "from", "as", "at", "use", "tool", "tools",
)  # fmt: skip
"""Words that say nothing about which tool is meant ("tool" is in every tool's context)."""

_STOP = frozenset(STOP_WORDS)
_K1 = 1.2
_B = 0.75
_NAME_WEIGHT = 3
"""A name word counts as this many description words: a name is short and chosen with care."""

_RUN = re.compile(r"[^\W_]+")  # letters and digits; "_" is a separator, not a letter
_VOWELS = frozenset("aeiouy")
_NO_POSTING: tuple[list[int], list[float]] = ([], [])


def words(text: str) -> list[str]:
    """The words of ``text`` as the index sees them, in order.

    - NFKC normalization first, so full-width letters, ligatures and the like match their
      plain forms (full-width ``get`` is ``get``, the ``fi`` ligature is ``fi``);
    - anything but a letter or a digit separates words: snake_case, kebab-case, dotted names,
      spaces and punctuation alike;
    - camelCase and PascalCase split at each case change (``getIssueComments`` is get, issue,
      comments; ``HTTPServer`` is http, server), except that an upper-case run followed by a
      lone ``s`` stays whole (``list_PRs`` is list, prs); digits stay with their letters
      (``ec2``, ``base64``);
    - case-folded (lower case, ``ß`` as ``ss``);
    - the words of ``STOP_WORDS`` dropped, before and after stemming (``tools``, ``uses``);
    - a light English stemmer on ASCII words, so that a query's "created issues" finds a
      description's "create an issue" (see ``_stem``).

    So ``words("getIssueComments")`` is ``["get", "issu", "comment"]``: stems, not English,
    and the same on both sides of a search, which is all that matters.
    """
    found: list[str] = []
    for run in _RUN.findall(unicodedata.normalize("NFKC", text)):
        found.extend(_run_words(run))
    return found


@functools.lru_cache(maxsize=16384)
def _run_words(run: str) -> tuple[str, ...]:
    """The words of one run of letters and digits. Cached: the same runs come back in tool
    after tool and query after query, and the cache's size is bounded."""
    found = []
    for part in _camel_parts(run):
        word = part.casefold()
        if word in _STOP:
            continue
        stem = _stem(word)
        if stem not in _STOP:
            found.append(stem)
    return tuple(found)


def _camel_parts(run: str) -> list[str]:
    """``run`` split where its case changes; one part when it has a single case or only its
    first letter is a capital (most words)."""
    if run[1:].islower() or run.isupper() or not any(char.isupper() for char in run):
        return [run]
    parts = []
    start = 0
    for i in range(1, len(run)):
        previous, char = run[i - 1], run[i]
        if not char.isupper():
            continue
        if not previous.isupper():  # "getIssue", "ec2Instance": a new word starts here
            cut = True
        else:  # "HTTPServer": the last capital of a run starts the next word, unless "PRs"
            following = run[i + 1 : i + 2]
            cut = following.islower() and not _plural_acronym(run, i)
        if cut:
            parts.append(run[start:i])
            start = i
    parts.append(run[start:])
    return parts


def _plural_acronym(run: str, i: int) -> bool:
    """Whether the capital at ``i`` ends an acronym made plural by a lone ``s`` ("PRs")."""
    return run[i + 1] == "s" and (i + 2 == len(run) or not run[i + 2].islower())


def _stem(word: str) -> str:
    """A light English stemmer: enough to make plurals, "-ing" and "-ed" forms and the base
    form meet, and no more (a wrong merge costs more than a missed one). On ASCII letters only;
    each rule applies only when at least 3 letters remain:

    1. plurals: ``ies`` becomes ``y`` (entries: entry); ``es`` goes after ``ss``, ``x``, ``z``,
       ``ch``, ``sh`` (classes, boxes, branches); else a final ``s`` goes unless after ``s``,
       ``u`` or ``i`` (files: file; but class, status, analysis stay);
    2. ``ing`` or ``ed`` goes when a vowel remains (creating, created: creat; string stays),
       then a doubled final consonant other than l, s, z is undoubled (running: run);
    3. otherwise a final ``e`` goes, so the base form meets the others (create: creat; files,
       file: fil). Not in every stemmer, but without it "create" never meets "created".
    """
    if not (word.isascii() and word.isalpha()) or len(word) < 4:
        return word
    word = _singular(word)
    for suffix in ("ing", "ed"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and not _VOWELS.isdisjoint(stem):
            if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "aeiouylsz":
                stem = stem[:-1]
            return stem
    if word.endswith("e") and len(word) >= 4:
        return word[:-1]
    return word


def _singular(word: str) -> str:
    """Rule 1 of ``_stem``: ``word`` without a plural ending."""
    if word.endswith("ies"):
        return word[:-3] + "y" if len(word) >= 6 else word
    if word.endswith(("sses", "xes", "zes", "ches", "shes")) and len(word) >= 5:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


class ToolIndex:
    """BM25 over each tool's words (see ``words``), for finding tools by a natural-language
    query.

    A tool's document is its name's words repeated 3 times, then its description's words: a
    name is short and chosen with care, so a query naming the tool outright (``"get issue
    comments"``) should win over a description that merely mentions those words.

    Okapi BM25 with k1 = 1.2, b = 0.75 and idf = ln(1 + (N - df + 0.5) / (df + 0.5)), which is
    always positive: a tool sharing any word with the query scores above 0, any other does not
    match. The part of each score that does not depend on the query is computed here, once, so
    a search only adds up precomputed weights from the postings of the query's words.

    A name given twice keeps its first text: names identify tools, and a search never returns
    the same name twice.
    """

    def __init__(self, tools: Iterable[tuple[str, str]]) -> None:
        """Index ``tools``, (name, description) pairs; a description may be empty."""
        self._names: list[str] = []
        documents: list[dict[str, int]] = []
        lengths: list[int] = []
        seen: set[str] = set()
        for name, text in tools:
            if name in seen:
                continue
            seen.add(name)
            document = words(name) * _NAME_WEIGHT + words(text)
            counts: dict[str, int] = {}
            for word in document:
                counts[word] = counts.get(word, 0) + 1
            self._names.append(name)
            documents.append(counts)
            lengths.append(len(document))
        self._postings = _postings(documents, lengths)

    def search(self, query: str, limit: int = 5) -> list[str]:
        """The names of the ``limit`` tools that best match ``query``, best first; a tie goes
        to the tool given first. No tool matches a blank query, or one sharing no word with
        any tool. Only the first ``QUERY_LIMIT`` characters of ``query`` are read.

        Each distinct query word counts once: repeating a word does not make it weigh more.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        scores: dict[int, float] = {}
        for word in dict.fromkeys(words(query[:QUERY_LIMIT])):
            positions, weights = self._postings.get(word, _NO_POSTING)
            for position, weight in zip(positions, weights, strict=True):
                scores[position] = scores.get(position, 0.0) + weight
        best = heapq.nsmallest(limit, scores.items(), key=_rank)
        return [self._names[position] for position, _ in best]

    def __len__(self) -> int:
        """The number of tools indexed (distinct names)."""
        return len(self._names)


def _rank(item: tuple[int, float]) -> tuple[float, int]:
    """Higher score first, then the order the tools were given."""
    position, score = item
    return -score, position


def _postings(
    documents: list[dict[str, int]], lengths: list[int]
) -> dict[str, tuple[list[int], list[float]]]:
    """For each word, the documents holding it and its full BM25 weight in each: idf times
    the saturated, length-normalized term frequency."""
    total = len(documents)
    average = sum(lengths) / total if total and sum(lengths) else 1.0
    postings: dict[str, tuple[list[int], list[float]]] = {}
    for position, (counts, length) in enumerate(zip(documents, lengths, strict=True)):
        norm = _K1 * (1 - _B + _B * length / average)
        for word, count in counts.items():
            positions, weights = postings.setdefault(word, ([], []))
            positions.append(position)
            weights.append(count * (_K1 + 1) / (count + norm))
    for positions, weights in postings.values():
        idf = math.log(1 + (total - len(positions) + 0.5) / (len(positions) + 0.5))
        weights[:] = [idf * weight for weight in weights]
    return postings
