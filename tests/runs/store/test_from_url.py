"""``toolwire.store.from_url``: one URL per store, as configuration files and the CLI give it."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire import ConfigurationError, MemoryStore, SQLiteStore
from toolwire.store import from_url


def test_memory_urls_take_their_size_and_ttl() -> None:
    store = from_url("memory://?max_runs=5&ttl=60")
    assert isinstance(store, MemoryStore)
    assert (store.max_runs, store.ttl) == (5, 60.0)
    assert from_url("memory://").ttl is None  # type: ignore[attr-defined]


def test_sqlite_urls_name_a_relative_or_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absolute = from_url(f"sqlite:///{tmp_path / 'a.db'}?ttl=none")
    assert isinstance(absolute, SQLiteStore)
    assert absolute.path == tmp_path / "a.db"
    assert absolute.ttl is None
    absolute.close()
    monkeypatch.chdir(tmp_path)
    relative = from_url("sqlite:///b.db")
    assert isinstance(relative, SQLiteStore)
    assert relative.path == Path("b.db")
    relative.close()
    assert (tmp_path / "b.db").exists()


def test_redis_and_postgres_urls_make_their_stores() -> None:
    from toolwire.store.postgres import PostgresStore
    from toolwire.store.redis import RedisStore

    redis_store = from_url("redis://127.0.0.1:6399/2?ttl=30")
    assert isinstance(redis_store, RedisStore)
    assert redis_store.ttl == 30.0
    postgres_store = from_url("postgresql://u:secret@127.0.0.1:5999/db?sslmode=disable")
    assert isinstance(postgres_store, PostgresStore)
    assert postgres_store.conninfo == "postgresql://u:secret@127.0.0.1:5999/db?sslmode=disable"
    assert "secret" not in repr(postgres_store)


@pytest.mark.parametrize(
    "url",
    [
        "runs.db",
        "ftp://host/x",
        "memory://?max_runs=0",
        "memory://?colour=blue",
        "sqlite://",
        "sqlite:///",
        "sqlite:///x.db?ttl=-1",
        "sqlite:///x.db?ttl=soon",
    ],
)
def test_a_url_of_no_known_store_or_option_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError):
        from_url(url)


def test_a_url_not_to_create_opens_only_a_sqlite_file_that_is_there(tmp_path: Path) -> None:
    from toolwire import StoreUnavailable

    url = f"sqlite:///{tmp_path / 'typo.db'}"
    with pytest.raises(StoreUnavailable, match="no such database file"):
        from_url(url, create=False)
    assert list(tmp_path.iterdir()) == []
    from_url(url).close()  # type: ignore[attr-defined]  # made by a store that may create
    store = from_url(f"{url}?ttl=60", create=False)
    assert isinstance(store, SQLiteStore)
    assert (store.ttl, store.create) == (60.0, False)
    store.close()


def test_a_url_not_to_create_refuses_a_memory_store_as_it_is_always_new() -> None:
    with pytest.raises(ConfigurationError, match="new, empty store"):
        from_url("memory://", create=False)


@pytest.mark.parametrize(
    ("given", "path"),
    [("sqlite:///runs.db", "runs.db"), ("SQLITE:////srv/runs.db", "/srv/runs.db")],
)
@pytest.mark.parametrize("create", [True, False])
def test_a_url_given_to_sqlite_store_as_its_path_is_refused_naming_from_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, path: str, create: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="not a URL") as refused:
        SQLiteStore(given, create=create)
    assert f"SQLiteStore({path!r})" in str(refused.value)
    assert "toolwire.store.from_url" in str(refused.value)
    assert list(tmp_path.rglob("*")) == []  # nothing made, not even a folder named sqlite:


@pytest.mark.parametrize("given", ["redis://127.0.0.1/0", "file:runs.db", Path("sqlite:/x.db")])
def test_a_url_of_any_kind_given_as_a_sqlite_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str | Path
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"not a URL.*from_url"):
        SQLiteStore(given)
    assert list(tmp_path.rglob("*")) == []


@pytest.mark.parametrize("create", [True, False])
def test_a_url_query_in_a_sqlite_path_is_refused_not_kept_in_the_file_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, create: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="followed by a URL query") as refused:
        SQLiteStore("runs.db?ttl=60", create=create)
    assert "SQLiteStore('runs.db', ttl=...)" in str(refused.value)
    assert "sqlite:///runs.db?ttl=..." in str(refused.value)
    assert list(tmp_path.iterdir()) == []
    # the URL names the same file with its ttl kept
    store = from_url("sqlite:///runs.db?ttl=60")
    assert isinstance(store, SQLiteStore)
    assert (store.path, store.ttl) == (Path("runs.db"), 60.0)
    store.close()
