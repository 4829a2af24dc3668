"""Where OAuth tokens are kept between runs: a file per server under the user's config
directory (the default), this process's memory, or a run store's database (SQLite).

What is kept, per server (its URL without query or fragment): the tokens, when the access
token expires, the client's registration, and how they were had (the grant and the client id:
tokens had another way are not used). In a database the entry is sealed (Fernet: AES and an
HMAC) with a key only the processes that use it hold; in a file it is plain JSON that only
its owner can read (0600, in a 0700 directory), unless a key is given there too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import stat
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio.to_thread

from toolwire._scrub import shown_url
from toolwire.errors import ConfigurationError, StoreUnavailable, ToolwireWarning

__all__ = [
    "FileTokenStore",
    "MemoryTokenStore",
    "SQLiteTokenStore",
    "TokenStore",
    "bound_entry",
    "config_dir",
    "default_token_store",
    "token_store_for",
    "tokens_beside",
]

KEY_VARIABLE = "TOOLWIRE_TOKEN_KEY"
"""The environment variable holding the key(s) that seal tokens (Fernet keys, comma-separated:
the first seals, any opens)."""
DIR_VARIABLE = "TOOLWIRE_CONFIG_DIR"
"""The environment variable naming toolwire's config directory (tokens under ``oauth/``)."""
_ENTRY_CAP = 1 << 20
"""Bytes of one stored entry read at most (an entry is a few KiB)."""
_log = logging.getLogger("toolwire")


@runtime_checkable
class TokenStore(Protocol):
    """Where a server's OAuth entry is kept; implementations must be safe to share between
    tasks. An entry is a JSON object (tokens, their expiry, the client's registration); the
    key is the server's URL without its query or fragment."""

    async def read(self, server: str) -> dict[str, Any] | None:
        """The entry kept for ``server``, or None."""
        ...

    async def write(self, server: str, entry: Mapping[str, Any]) -> None:
        """Keep ``entry`` for ``server``, replacing what was there (atomically)."""
        ...

    async def delete(self, server: str) -> None:
        """Forget what is kept for ``server`` (nothing happens when there is nothing)."""
        ...


async def bound_entry(store: TokenStore, server: str) -> dict[str, Any]:
    """The entry ``store`` keeps for ``server`` (as ``server_key`` makes it), or ``{}``: when
    there is none, and when it was kept for another server (its sealed ``server`` field is not
    ``server``: a row or file copied under this key, or one with no such field). Nothing of an
    entry kept for another server is used here, neither its tokens nor its client's
    registration, so a token goes only to the server it was issued for."""
    entry = await store.read(server)
    if not isinstance(entry, dict):
        return {}
    kept_for = entry.get("server")
    if kept_for != server:
        other = shown_url(kept_for) if isinstance(kept_for, str) else "no server"
        _log.warning(
            "OAuth: the entry kept under %s was kept for %s: ignored, none of its tokens is "
            "sent (a login keeps a new one)",
            server,
            other,
        )
        return {}
    return dict(entry)


class MemoryTokenStore:
    """Entries in this process's memory, gone when it ends (tests, short scripts)."""

    def __init__(self) -> None:
        self._entries: dict[str, str] = {}

    async def read(self, server: str) -> dict[str, Any] | None:
        text = self._entries.get(server)
        return None if text is None else dict(json.loads(text))

    async def write(self, server: str, entry: Mapping[str, Any]) -> None:
        self._entries[server] = json.dumps(dict(entry))  # a copy: the caller's dict may change

    async def delete(self, server: str) -> None:
        self._entries.pop(server, None)

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._entries)} servers)"


class FileTokenStore:
    """One file per server under ``directory`` (default: ``oauth/`` in
    [`config_dir`][toolwire.mcp.config_dir]), created with mode 0600 in a directory of mode
    0700, written atomically (a new file renamed over the old). A file that others can read
    is made private again, with a warning.

    Args:
        directory: where the files go.
        key: seals the files too (see [`SQLiteTokenStore`][toolwire.mcp.SQLiteTokenStore]);
            default: the ``TOOLWIRE_TOKEN_KEY`` environment variable, if set.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, key: str | None = None):
        self.directory = Path(directory) if directory is not None else config_dir() / "oauth"
        self._seal = _Seal.of(key if key is not None else os.environ.get(KEY_VARIABLE) or None)

    async def read(self, server: str) -> dict[str, Any] | None:
        data = await anyio.to_thread.run_sync(self._read, self._path(server))
        if data is not None and len(data) > _ENTRY_CAP:
            _unreadable(server, f"it is over {_ENTRY_CAP // 1024} KiB")
            return None
        return None if data is None else self._opened(data, server)

    async def write(self, server: str, entry: Mapping[str, Any]) -> None:
        data = self._sealed(entry)
        await anyio.to_thread.run_sync(self._write, self._path(server), data)

    async def delete(self, server: str) -> None:
        path = self._path(server)
        await anyio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"

    def _path(self, server: str) -> Path:
        return self.directory / f"{hashlib.sha256(server.encode()).hexdigest()[:40]}.json"

    def _sealed(self, entry: Mapping[str, Any]) -> bytes:
        text = json.dumps(dict(entry), separators=(",", ":")).encode()
        return self._seal.close(text) if self._seal is not None else text

    def _opened(self, data: bytes, server: str) -> dict[str, Any] | None:
        try:
            if self._seal is not None and not data.lstrip().startswith(b"{"):
                data = self._seal.open(data)
            entry = json.loads(data)
        except (ValueError, _SealBroken):
            _unreadable(server, "it is not JSON, or not sealed with this key")
            return None
        return entry if isinstance(entry, dict) else None

    def _directory(self) -> Path:
        """The directory, made (0700) if missing; refused when another user owns it."""
        directory = self.directory
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = directory.lstat()
        except OSError as exc:
            raise StoreUnavailable(f"token store {directory}: {exc.strerror or exc}") from None
        if not stat.S_ISDIR(info.st_mode):
            raise StoreUnavailable(f"token store {directory}: not a directory")
        if os.name == "posix":
            if info.st_uid != os.geteuid():
                raise StoreUnavailable(f"token store {directory}: owned by another user")
            if stat.S_IMODE(info.st_mode) & 0o077:
                os.chmod(directory, 0o700)
        return directory

    def _read(self, path: Path) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreUnavailable(f"token store {path}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as file:
            if os.name == "posix":
                info = os.fstat(fd)
                if info.st_uid != os.geteuid():
                    raise StoreUnavailable(f"token store {path}: owned by another user")
                if stat.S_IMODE(info.st_mode) & 0o077:
                    os.fchmod(fd, 0o600)
                    warnings.warn(
                        f"token store {path} could be read by other users; it is private now "
                        "(mode 0600): if others could reach this account, revoke its tokens",
                        ToolwireWarning,
                        stacklevel=2,
                    )
            return file.read(_ENTRY_CAP + 1)

    def _write(self, path: Path, data: bytes) -> None:
        directory = self._directory()
        temporary = directory / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(temporary, flags, 0o600)
            try:
                if os.name == "posix":
                    os.fchmod(fd, 0o600)  # whatever the umask
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, path)
            if os.name == "posix":  # the rename itself survives a crash
                dir_fd = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise StoreUnavailable(f"token store {path}: {exc.strerror or exc}") from None


class SQLiteTokenStore:
    """Entries in a table (``toolwire_oauth``) of a SQLite database, the run store's when
    made by [`token_store_for`][toolwire.mcp.token_store_for]: every process using that
    database uses the same tokens. Each entry is sealed with ``key`` (a Fernet key:
    AES-128-CBC and HMAC-SHA256): a copy of the database alone gives no token.

    Args:
        path: the database file.
        key: the sealing key, or several comma-separated (the first seals, any opens: rotate
            by putting a new key first); default: the ``TOOLWIRE_TOKEN_KEY`` environment
            variable. Make one with ``python -c "from cryptography.fernet import Fernet;
            print(Fernet.generate_key().decode())"``.
        busy_timeout: seconds to wait for another process's write.

    Raises:
        ConfigurationError: no key, or one that is not a Fernet key.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, key: str | None = None, busy_timeout: float = 5.0
    ) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        seal = _Seal.of(key if key is not None else os.environ.get(KEY_VARIABLE) or None)
        if seal is None:
            raise ConfigurationError(
                f"tokens kept in a database are sealed with a key: set {KEY_VARIABLE} (make "
                'one with: python -c "from cryptography.fernet import Fernet; '
                'print(Fernet.generate_key().decode())")'
            )
        self._seal = seal
        self._made = False

    async def read(self, server: str) -> dict[str, Any] | None:
        row = await anyio.to_thread.run_sync(self._select, server)
        if row is None:
            return None
        try:
            entry = json.loads(self._seal.open(row))
        except (ValueError, _SealBroken):
            _unreadable(server, "it is not sealed with this key")
            return None
        return entry if isinstance(entry, dict) else None

    async def write(self, server: str, entry: Mapping[str, Any]) -> None:
        sealed = self._seal.close(json.dumps(dict(entry), separators=(",", ":")).encode())
        await anyio.to_thread.run_sync(self._upsert, server, sealed)

    async def delete(self, server: str) -> None:
        await anyio.to_thread.run_sync(self._remove, server)

    def __repr__(self) -> str:
        return f"SQLiteTokenStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout)
            if not self._made:
                with connection:
                    connection.execute(
                        "CREATE TABLE IF NOT EXISTS toolwire_oauth ("
                        "server TEXT PRIMARY KEY, entry BLOB NOT NULL, updated_at REAL)"
                    )
                self._made = True
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"token store {self.path}: {exc}") from None
        return connection

    def _select(self, server: str) -> bytes | None:
        connection = self._connect()
        try:
            row = connection.execute(
                "SELECT entry FROM toolwire_oauth WHERE server = ?", (server,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"token store {self.path}: {exc}") from None
        finally:
            connection.close()
        return bytes(row[0]) if row is not None and len(row[0]) <= _ENTRY_CAP else None

    def _upsert(self, server: str, sealed: bytes) -> None:
        connection = self._connect()
        try:
            with connection:
                connection.execute(
                    "INSERT INTO toolwire_oauth (server, entry, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (server) DO UPDATE SET entry = excluded.entry, "
                    "updated_at = excluded.updated_at",
                    (server, sealed, time.time()),
                )
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"token store {self.path}: {exc}") from None
        finally:
            connection.close()

    def _remove(self, server: str) -> None:
        connection = self._connect()
        try:
            with connection:
                connection.execute("DELETE FROM toolwire_oauth WHERE server = ?", (server,))
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"token store {self.path}: {exc}") from None
        finally:
            connection.close()


def config_dir() -> Path:
    """toolwire's directory of user configuration: ``TOOLWIRE_CONFIG_DIR`` when set; else
    ``$XDG_CONFIG_HOME/toolwire`` or ``~/.config/toolwire`` (Linux and other Unix),
    ``~/Library/Application Support/toolwire`` (macOS), ``%APPDATA%\\toolwire`` (Windows)."""
    given = os.environ.get(DIR_VARIABLE)
    if given:
        return Path(given)
    if sys.platform == "win32":
        base = os.environ.get("APPDATA")
        return Path(base) / "toolwire" if base else Path.home() / "AppData" / "Roaming" / "toolwire"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "toolwire"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base_dir = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base_dir / "toolwire"


def default_token_store() -> TokenStore:
    """The store tokens go to when none is given: a [`FileTokenStore`][] in the config
    directory."""
    return FileTokenStore()


def token_store_for(store: Any, *, key: str | None = None) -> TokenStore:
    """A token store in the database of run store ``store`` (or of the store at that URL),
    beside its runs: a [`SQLiteTokenStore`][] for a [`SQLiteStore`][toolwire.SQLiteStore]
    (``sqlite:///path``), a [`MemoryTokenStore`][] for a
    [`MemoryStore`][toolwire.MemoryStore].

    Raises:
        ConfigurationError: a store kind that cannot keep tokens yet (Redis, PostgreSQL: keep
            them in the default file store), or no sealing key (see [`SQLiteTokenStore`][]).
    """
    from toolwire.runs.store import MemoryStore, SQLiteStore

    if isinstance(store, str):
        if store.startswith("sqlite:"):
            from toolwire.runs.store import from_url

            store = from_url(store)
        elif store.startswith(("memory:", "mem:")):
            return MemoryTokenStore()
    if isinstance(store, SQLiteStore):
        return SQLiteTokenStore(store.path, key=key)
    if isinstance(store, MemoryStore):
        return MemoryTokenStore()
    kind = type(store).__name__ if not isinstance(store, str) else store.split(":", 1)[0]
    raise ConfigurationError(
        f"tokens cannot be kept in a {kind} store yet (SQLite only): leave the token store to "
        "its default (a file under the user's config directory)"
    )


def tokens_beside(store: Any) -> TokenStore | None:
    """The token store a gateway's hub uses beside its run store ``store``: the one in its
    database (where ``toolwire mcp login --store`` keeps tokens) for a SQLite store when the
    sealing key is set; None otherwise (the default file store: a Redis or PostgreSQL
    store cannot keep tokens, a memory one would forget them).

    A SQLite store's database that holds tokens while no key is set gets a warning: they stay
    sealed, and the hub uses the file store.

    Raises:
        ConfigurationError: ``TOOLWIRE_TOKEN_KEY`` holds no Fernet key.
    """
    from toolwire.runs.store import SQLiteStore

    if not isinstance(store, SQLiteStore) or str(store.path) == ":memory:":
        return None
    if os.environ.get(KEY_VARIABLE):
        return token_store_for(store)
    if _holds_tokens(Path(store.path)):
        warnings.warn(
            f"the run store's database keeps OAuth tokens, sealed, and {KEY_VARIABLE} is not "
            "set: the hub uses the tokens of the file under the config directory instead",
            ToolwireWarning,
            stacklevel=2,
        )
    return None


def _holds_tokens(path: Path) -> bool:
    """Whether the SQLite database at ``path`` has entries in the token table (read only)."""
    if not path.is_file():
        return False
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return False
    try:
        row = connection.execute("SELECT 1 FROM toolwire_oauth LIMIT 1").fetchone()
    except sqlite3.Error:  # no such table: nothing was kept there
        return False
    finally:
        connection.close()
    return row is not None


class _SealBroken(Exception):
    pass


class _Seal:
    """Fernet keys: the first seals, any opens."""

    def __init__(self, keys: list[bytes]) -> None:
        from cryptography.fernet import Fernet, MultiFernet

        try:
            self._fernet = MultiFernet([Fernet(k) for k in keys])
        except ValueError:
            raise ConfigurationError(
                f"{KEY_VARIABLE}: not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from None

    @classmethod
    def of(cls, text: str | None) -> _Seal | None:
        if text is None:
            return None
        keys = [part.strip().encode() for part in text.split(",") if part.strip()]
        return cls(keys) if keys else None

    def close(self, data: bytes) -> bytes:
        return self._fernet.encrypt(data)

    def open(self, data: bytes) -> bytes:
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(data)
        except InvalidToken:
            raise _SealBroken from None


def _unreadable(server: str, why: str) -> None:
    warnings.warn(
        f"the tokens kept for {server} cannot be read ({why}); they are ignored",
        ToolwireWarning,
        stacklevel=3,
    )
