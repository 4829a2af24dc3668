"""Tool search ranking: the tokenizer, the ranking rules, and recall on the real tool
definitions of tests/data/tools.jsonl (what a model asking for tools would actually search)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus import TOOLS
from toolwire._search_rank import QUERY_LIMIT, STOP_WORDS, ToolIndex, words

# -- the tokenizer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("getIssueComments", ["get", "issu", "comment"]),
        ("GetIssueComments", ["get", "issu", "comment"]),
        ("get_issue_comments", ["get", "issu", "comment"]),
        ("get-issue-comments", ["get", "issu", "comment"]),
        ("github.issues.get", ["github", "issu", "get"]),
        ("list_PRs", ["list", "prs"]),
        ("HTTPServer", ["http", "server"]),
        ("getUIComponents", ["get", "ui", "component"]),
        ("ec2Instance", ["ec2", "instanc"]),
        ("base64 decode", ["base64", "decod"]),
        ("GET_ISSUE", ["get", "issu"]),
    ],
)
def test_names_split_at_separators_and_case_changes(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_stop_words_are_dropped() -> None:
    assert words(" ".join(STOP_WORDS)) == []
    assert words("Use this tool to search the issues of a repository") == [
        "search",
        "issu",
        "repository",
    ]
    assert words("Tools, THE Tool") == []


@pytest.mark.parametrize(
    "forms",
    [
        ("create", "creates", "created", "creating", "Create"),
        ("issue", "issues"),
        ("entry", "entries"),
        ("branch", "branches"),
        ("class", "classes"),
        ("box", "boxes"),
        ("run", "running"),
        ("commit", "committed"),
        ("file", "files"),
        ("call", "calls", "called", "calling"),
        ("update", "updates", "updated", "updating"),
    ],
)
def test_forms_of_a_word_meet(forms: tuple[str, ...]) -> None:
    assert len({tuple(words(form)) for form in forms}) == 1


@pytest.mark.parametrize(
    "word",
    # Kept whole: nothing to strip, or too little would remain ("used" is not "us").
    ["string", "status", "analysis", "process", "used", "lies", "add", "list", "get", "prs"],
)
def test_the_stemmer_leaves_short_and_unsuffixed_words(word: str) -> None:
    assert words(word) == [word]


def test_unicode_is_normalized_and_kept() -> None:
    assert words("\uff47\uff45\uff54") == ["get"]  # full-width letters
    assert words("\ufb01le") == words("file")  # the "fi" ligature
    assert words("Straße") == words("STRASSE")
    assert words("Ärger über Öl") == ["ärger", "über", "öl"]  # not ASCII: not stemmed
    assert words("根据阳历时间") == ["根据阳历时间"]


def test_nothing_but_separators_has_no_words() -> None:
    assert words("") == []
    assert words("  \n\t... ___ -- /\\ ()") == []


# -- ranking

SMALL = [
    ("get_issue", "Get an issue of a GitHub repository."),
    ("list_issues", "List the issues of a repository."),
    ("create_issue", "Create a new issue in a repository."),
    ("get_issue_comments", "Get the comments of an issue."),
    ("search_code", "Search code across repositories."),
    ("read_file", "Read a file from disk."),
    ("notes", ""),
]


@pytest.mark.parametrize("name", [name for name, _ in SMALL])
def test_a_tool_named_outright_comes_first(name: str) -> None:
    assert ToolIndex(SMALL).search(name)[0] == name


def test_a_paraphrase_finds_the_tool() -> None:
    index = ToolIndex(SMALL)
    assert index.search("creating new issues")[0] == "create_issue"
    assert index.search("comments on an issue")[0] == "get_issue_comments"


def test_ties_keep_the_order_the_tools_were_given() -> None:
    tools = [("beta", "same words"), ("alpha", "same words"), ("gamma", "same words")]
    assert ToolIndex(tools).search("same") == ["beta", "alpha", "gamma"]
    assert ToolIndex(reversed(tools)).search("words") == ["gamma", "alpha", "beta"]


@pytest.mark.parametrize("query", ["", "   \n\t", "the of a", "zzz nothing matches"])
def test_a_query_without_a_known_word_finds_nothing(query: str) -> None:
    assert ToolIndex(SMALL).search(query) == []


def test_limit() -> None:
    index = ToolIndex(SMALL)
    assert len(index.search("issue", limit=1)) == 1
    assert len(index.search("issue", limit=100)) == 4  # every tool that matches, no more
    for wrong in (0, -1):
        with pytest.raises(ValueError, match="limit"):
            index.search("issue", limit=wrong)


def test_a_long_query_is_cut() -> None:
    index = ToolIndex(SMALL)
    assert index.search("read file " * 1000)[0] == "read_file"  # 10,000 characters
    assert index.search(" " * QUERY_LIMIT + "read file") == []  # past the cut


def test_a_name_given_twice_keeps_its_first_text() -> None:
    index = ToolIndex([("a", "first"), ("a", "second"), ("b", "")])
    assert len(index) == 2
    assert index.search("first") == ["a"]
    assert index.search("second") == []


def test_an_empty_index_finds_nothing() -> None:
    assert len(ToolIndex([])) == 0
    assert ToolIndex([]).search("anything") == []
    assert ToolIndex([("", "")]).search("anything") == []


@given(
    tools=st.lists(st.tuples(st.text(max_size=20), st.text(max_size=60)), max_size=12),
    data=st.data(),
    limit=st.integers(min_value=1, max_value=8),
)
def test_search_returns_at_most_limit_distinct_indexed_names(
    tools: list[tuple[str, str]], data: st.DataObject, limit: int
) -> None:
    texts = [f"{name} {text}" for name, text in tools]
    query = data.draw((st.text(max_size=80) | st.sampled_from(texts)) if texts else st.text())
    index = ToolIndex(tools)
    found = index.search(query, limit)
    assert len(found) <= limit
    assert len(set(found)) == len(found)
    assert set(found) <= {name for name, _ in tools}
    assert found == ToolIndex(tools).search(query, limit + 3)[:limit]  # stable, prefix-closed


# -- recall on real tool definitions


def indexed() -> list[tuple[str, str]]:
    """The corpus's tools, each name once (the first wins), with its description."""
    seen: dict[str, str] = {}
    for record in TOOLS:
        seen.setdefault(record["name"], record.get("description") or "")
    return list(seen.items())


INDEXED = indexed()


def first_sentence(text: str) -> str:
    """What a model paraphrasing a need might send: the opening of a description."""
    return re.split(r"\. |\n", text.strip(), maxsplit=1)[0]


def name_words(name: str) -> str:
    """A name as a person reads it aloud: ``getIssueComments`` is "get issue comments"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name)
    return " ".join(re.split(r"[^0-9A-Za-z]+", spaced)).strip().lower()


def recall(queries: list[tuple[str, str]]) -> tuple[float, float]:
    """Recall@1 and recall@5 of (expected name, query) pairs on the corpus index."""
    index = ToolIndex(INDEXED)
    results = [(name, index.search(query, limit=5)) for name, query in queries]
    at_1 = sum(found[:1] == [name] for name, found in results) / len(results)
    at_5 = sum(name in found for name, found in results) / len(results)
    return at_1, at_5


def test_the_first_sentence_of_a_description_finds_its_tool() -> None:
    queries = [(name, first_sentence(text)) for name, text in INDEXED if len(text.split()) >= 5]
    at_1, at_5 = recall(queries)
    print(f"\nfirst sentence: recall@1={at_1:.3f} recall@5={at_5:.3f} over {len(queries)} tools")
    # Measured 0.930 and 0.998 over 487 tools. Most misses at 1 are near twins the corpus
    # really holds (playwright_click and puppeteer_click, list_issues and list_sub_issues).
    assert at_1 >= 0.90
    assert at_5 >= 0.97


def test_the_words_of_a_name_find_its_tool() -> None:
    queries = [(name, name_words(name)) for name, _ in INDEXED]
    at_1, at_5 = recall(queries)
    print(f"\nname words: recall@1={at_1:.3f} recall@5={at_5:.3f} over {len(queries)} tools")
    # Measured 0.924 and 0.995 over 619 tools: a bare "fetch" or "search" (and "search tools",
    # "tools" being a stop word) loses to the many tools whose names start with it.
    assert at_1 >= 0.89
    assert at_5 >= 0.97
