"""Opening Hypothesis's example database from one string, the same way for every front end.

The example database is a cache of the choice sequences behind failing and interesting cases
(docs/architecture.md, "Two stores"): a new run replays what an earlier one found before drawing
anything new. ``fuzzkern run --db SPEC`` and ``pytest --fuzzkern-db SPEC`` take the same SPEC:

- a folder path: a :class:`~hypothesis.database.DirectoryBasedExampleDatabase`, safe to share
  between the processes of one machine (pytest-xdist workers, parallel ``fuzzkern run``s);
- ``redis://host:port/n`` (or ``rediss://``): a
  :class:`~hypothesis.extra.redis.RedisExampleDatabase`, so campaigns on several machines
  share what they find; needs the ``redis`` package (``pip install 'fuzzkern[redis]'``);
- ``none``: no database.

A Redis server that drops in the middle of a run does not end it: the run warns once and goes
on with the local folder database (``.hypothesis/examples`` by default), which then holds what
it finds; the corpus, the durable record, is never affected.

>>> open_database("none") is None
True
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable
from typing import Any

from hypothesis.database import ExampleDatabase

from fuzzkern.errors import FuzzkernError

#: Keys fuzzkern writes to a shared Redis start with this, apart from plain Hypothesis tests.
REDIS_KEY_PREFIX = b"fuzzkern-example:"
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class DatabaseError(FuzzkernError):
    """A database spec could not be parsed, or the database it names cannot be reached."""


def is_redis(spec: str) -> bool:
    return spec.strip().lower().startswith(_REDIS_SCHEMES)


def check_spec(spec: str) -> None:
    """Raise :class:`DatabaseError` for a spec :func:`open_database` cannot understand, without
    touching the filesystem or the network (for validating options early)."""
    text = spec.strip()
    if not text:
        raise DatabaseError(
            "Expected a database spec (a folder, redis://host:port/n or none) but got an empty "
            "string."
        )
    if "://" in text and not is_redis(text):
        scheme = text.split("://", 1)[0]
        raise DatabaseError(
            f"Expected a folder, redis://host:port/n or none but got spec={spec!r} (unknown "
            f"scheme {scheme!r}). Use redis:// for a shared database, or a folder path."
        )


class DatabaseFallbackWarning(UserWarning):
    """The shared Redis database dropped; the run goes on with the local folder database."""


#: where a run goes on when its Redis database drops
DEFAULT_FALLBACK = os.path.join(".hypothesis", "examples")


def open_database(spec: str | os.PathLike[str] | None, *, read_only: bool = False,
                  connect_timeout: float = 5.0, fallback: str = DEFAULT_FALLBACK) -> Any:
    """The :class:`~hypothesis.database.ExampleDatabase` ``spec`` names, or ``None``.

    A Redis database is pinged here, so an unreachable server is one clear error up front
    rather than an exception in the middle of a campaign; one that drops later falls back to
    the folder ``fallback`` with a warning (:class:`FallbackDatabase`). ``read_only`` wraps
    the database in
    :class:`~hypothesis.database.ReadOnlyDatabase`: a run replays what is stored and adds
    nothing (the ``ci`` profile of the pytest plugin).
    """
    from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

    if spec is None:
        return None
    text = os.fspath(spec).strip()
    check_spec(text)
    if text.lower() == "none":
        return None
    db: Any
    if is_redis(text):
        db = FallbackDatabase(_open_redis(text, connect_timeout), fallback,
                              describe_spec(text))
    else:
        folder = os.path.expanduser(text)
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise DatabaseError(f"Expected a folder for the example database but {text!r} is a "
                                "file; pass a folder, redis://host:port/n or none.")
        db = DirectoryBasedExampleDatabase(folder)
    return ReadOnlyDatabase(db) if read_only else db


def _open_redis(url: str, connect_timeout: float) -> Any:
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError as e:
        raise DatabaseError(
            f"Expected the redis package for db={url!r} but it is not installed ({e}). "
            "Install it with `pip install 'fuzzkern[redis]'`, or use a folder as the database."
        ) from None
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=connect_timeout)
    except ValueError as e:
        raise DatabaseError(
            f"Expected a URL like redis://host:6379/0 but got db={url!r} ({e})."
        ) from None
    try:
        client.ping()
    except redis.RedisError as e:
        raise DatabaseError(
            f"cannot reach the Redis database at {url!r}: {type(e).__name__}: {e}. Start "
            "redis-server there, or pass a folder or `none` as the database."
        ) from None
    return RedisExampleDatabase(client, key_prefix=REDIS_KEY_PREFIX)


class FallbackDatabase(ExampleDatabase):
    """A shared database (Redis) that hands over to a local folder database the first time
    it fails, with one warning, instead of ending the run with the connection error."""

    def __init__(self, primary: Any, fallback: str, label: str) -> None:
        super().__init__()
        self.primary = primary
        self.fallback_path = fallback
        self.label = label
        self.local: Any = None

    def __repr__(self) -> str:
        return f"FallbackDatabase({self.primary!r}, fallback={self.fallback_path!r})"

    def _switch(self, error: BaseException) -> Any:
        from hypothesis.database import DirectoryBasedExampleDatabase

        if self.local is None:
            self.local = DirectoryBasedExampleDatabase(os.path.expanduser(self.fallback_path))
            message = (f"the example database {self.label} dropped ({type(error).__name__}: "
                       f"{error}); going on with the local database {self.fallback_path}")
            print(f"fuzzkern: warning: {message}", file=sys.stderr, flush=True)
            warnings.warn(message, DatabaseFallbackWarning, stacklevel=3)
        return self.local

    def _call(self, method: str, *args: Any) -> Any:
        if self.local is None:
            try:
                return getattr(self.primary, method)(*args)
            except _connection_errors() as e:
                self._switch(e)
        return getattr(self.local, method)(*args)

    def save(self, key: bytes, value: bytes) -> None:
        self._call("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self._call("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._call("move", src, dest, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        if self.local is None:
            try:  # read it all here: a server that drops half-way through fails in this call
                values = list(self.primary.fetch(key))
            except _connection_errors() as e:
                self._switch(e)
            else:
                yield from values
                return
        yield from self.local.fetch(key)


def _connection_errors() -> tuple[type[BaseException], ...]:
    try:
        import redis

        return (redis.RedisError, OSError)
    except ImportError:  # pragma: no cover
        return (OSError,)


def describe_spec(spec: str | None) -> str:
    """A spec for a report header: a Redis URL without its password."""
    if spec is None:
        return "none"
    text = str(spec)
    if is_redis(text) and "@" in text:
        scheme, rest = text.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return text
