"""Opening Hypothesis's example database from one string, the same way for every front end.

The example database is a cache of the choice sequences behind failing and interesting cases
(DESIGN decision 9): a new run replays what an earlier one found before drawing anything new.
``fuzzkern run --db SPEC`` and ``pytest --fuzzkern-db SPEC`` take the same SPEC:

- a folder path: a :class:`~hypothesis.database.DirectoryBasedExampleDatabase`, safe to share
  between the processes of one machine (pytest-xdist workers, parallel ``fuzzkern run``s);
- ``redis://host:port/n`` (or ``rediss://``): a
  :class:`~hypothesis.extra.redis.RedisExampleDatabase`, so campaigns on several machines
  share what they find; needs the ``redis`` package (``pip install 'fuzzkern[redis]'``);
- ``none``: no database.

>>> open_database("none") is None
True
"""

from __future__ import annotations

import os
from typing import Any

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


def open_database(spec: str | os.PathLike[str] | None, *, read_only: bool = False,
                  connect_timeout: float = 5.0) -> Any:
    """The :class:`~hypothesis.database.ExampleDatabase` ``spec`` names, or ``None``.

    A Redis database is pinged here, so an unreachable server is one clear error up front
    rather than an exception in the middle of a campaign. ``read_only`` wraps the database in
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
        db = _open_redis(text, connect_timeout)
    else:
        db = DirectoryBasedExampleDatabase(os.path.expanduser(text))
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


def describe_spec(spec: str | None) -> str:
    """A spec for a report header: a Redis URL without its password."""
    if spec is None:
        return "none"
    text = str(spec)
    if is_redis(text) and "@" in text:
        scheme, rest = text.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return text
