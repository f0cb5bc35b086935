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

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

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
    from hypothesis.database import ReadOnlyDatabase

    if spec is None:
        return None
    text = os.fspath(spec).strip()
    check_spec(text)
    if text.lower() == "none":
        return None
    db: Any
    if is_redis(text):
        try:
            db = FallbackDatabase(_open_redis(text, connect_timeout), fallback,
                                  describe_spec(text))
        except BrokenRedis as e:  # it answers, but not as Redis: the run goes on without it
            db = FallbackDatabase(None, fallback, describe_spec(text))
            db.refuse(e)
    else:
        folder = os.path.expanduser(text)
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise DatabaseError(f"Expected a folder for the example database but {text!r} is a "
                                "file; pass a folder, redis://host:port/n or none.")
        db = FolderDatabase(folder)
    return ReadOnlyDatabase(db) if read_only else db


#: the largest value (one choice sequence) read from an example database; Hypothesis's own
#: are a few KiB. Larger ones are skipped, as are files that are not regular files.
VALUE_BYTES = 1 << 20

#: the most bytes one Redis reply may take before the server counts as broken (a flood)
REPLY_BYTES = 16 << 20

#: seconds a Redis server may take to answer once connected (a server that stops answering
#: mid-run then drops to the local database instead of hanging the run)
REPLY_TIMEOUT = 15.0


class FolderDatabase(DirectoryBasedExampleDatabase):
    """Hypothesis's folder database, read as untrusted data: only regular files of at most
    :data:`VALUE_BYTES` below the folder's own real path are read, each opened without
    following a link (``O_NOFOLLOW``) or blocking (``O_NONBLOCK``, then ``fstat``). A FIFO, a
    device or a link to ``/dev/zero`` in the folder is skipped, never read. Nothing is
    written, moved or removed through a key folder that is a link (to a folder outside the
    database): such a key is left as it is."""

    def _inside(self, key: bytes) -> bool:
        """Whether ``key``'s folder is (or would be) a real folder right below the
        database's own real folder, not a link to elsewhere."""
        folder = self._key_path(key)
        try:
            return not os.path.islink(folder) and os.path.realpath(folder) == os.path.join(
                os.path.realpath(self.path), folder.name)
        except OSError:
            return False

    def save(self, key: bytes, value: bytes) -> None:
        if self._inside(key):
            super().save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        if self._inside(key):
            super().delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if self._inside(src) and self._inside(dest):
            super().move(src, dest, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        import stat

        folder = self._key_path(key)
        try:
            if not self._inside(key) or not folder.is_dir():
                return
            names = os.listdir(folder)
        except OSError:
            return
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        for name in names:
            try:
                fd = os.open(folder / name, flags)
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > VALUE_BYTES:
                    continue
                data = os.read(fd, VALUE_BYTES + 1)
            except OSError:
                continue
            finally:
                os.close(fd)
            if len(data) <= VALUE_BYTES:
                yield data


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
        client = redis.Redis.from_url(url, socket_connect_timeout=connect_timeout,
                                      socket_timeout=max(connect_timeout, REPLY_TIMEOUT))
    except ValueError as e:
        raise DatabaseError(
            f"Expected a URL like redis://host:6379/0 but got db={url!r} ({e})."
        ) from None
    pool = client.connection_pool
    pool.connection_class = _bounded(pool.connection_class)
    try:
        answer = client.ping()
    except redis.RedisError as e:
        raise DatabaseError(
            f"cannot reach the Redis database at {describe_spec(url)!r}: {type(e).__name__}: "
            f"{_short(e)}. Start redis-server there, or pass a folder or `none` as the "
            "database."
        ) from None
    except Exception as e:  # a reply redis-py cannot make sense of (+OK to HELLO, ...)
        raise BrokenRedis(f"a reply that is not what Redis sends ({type(e).__name__}: "
                          f"{_short(e)})") from None
    if answer is not True:
        raise BrokenRedis(f"it answered PING with {_short(answer)}, not PONG")
    return RedisExampleDatabase(client, key_prefix=REDIS_KEY_PREFIX)


class BrokenRedis(Exception):
    """A server that answers, but not as Redis does (``+OK`` to everything, a flood, values
    of the wrong type): refused, and the run goes on with the local database."""


def _short(value: Any, most: int = 120) -> str:
    text = " ".join(repr(value).split()) if not isinstance(value, BaseException) else " ".join(
        str(value).split())
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


def _bounded(base: type) -> type:
    """``base`` (a redis-py connection class) whose socket refuses a reply past
    :data:`REPLY_BYTES`: a server that floods is a connection error, not a MemoryError."""
    import redis

    class Counted:
        def __init__(self, sock: Any) -> None:
            self._sock, self._got = sock, 0

        def __getattr__(self, name: str) -> Any:
            return getattr(self._sock, name)

        def _count(self, n: int) -> None:
            self._got += n
            if self._got > REPLY_BYTES:
                raise redis.ConnectionError(
                    f"a reply of more than {REPLY_BYTES} bytes (a flood, not a Redis server?)")

        def recv(self, *args: Any) -> bytes:
            data: bytes = self._sock.recv(*args)
            self._count(len(data))
            return data

        def recv_into(self, buffer: Any, *args: Any) -> int:
            n: int = self._sock.recv_into(buffer, *args)
            self._count(n)
            return n

        def sendall(self, data: Any, *args: Any) -> None:
            self._got = 0  # a new request: its reply is counted afresh
            self._sock.sendall(data, *args)

    class BoundedConnection(base):  # type: ignore[misc, valid-type]
        def _connect(self) -> Any:
            return Counted(super()._connect())

    return BoundedConnection


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

    def refuse(self, error: BaseException) -> None:
        """Go on with the local database from now on, saying why in one line."""
        if self.local is None:
            self.local = FolderDatabase(os.path.expanduser(self.fallback_path))
            why = (f"refused: {_short(error)}" if isinstance(error, BrokenRedis) else
                   f"dropped ({type(error).__name__}: {_short(error)})")
            message = (f"the example database {self.label} {why}; going on with the local "
                       f"database {self.fallback_path}")
            print(f"fuzzkern: warning: {message}", file=sys.stderr, flush=True)
            warnings.warn(message, DatabaseFallbackWarning, stacklevel=3)

    def _call(self, method: str, *args: Any) -> Any:
        if self.local is None:
            try:
                return getattr(self.primary, method)(*args)
            except _broken() as e:
                self.refuse(_as_broken(e))
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
                if not all(isinstance(v, bytes) and len(v) <= VALUE_BYTES for v in values):
                    raise BrokenRedis("it answered SMEMBERS with something other than a set "
                                      f"of values of at most {VALUE_BYTES} bytes")
            except _broken() as e:
                self.refuse(_as_broken(e))
            else:
                yield from values
                return
        yield from self.local.fetch(key)


def _broken() -> tuple[type[BaseException], ...]:
    """What a Redis that drops or misbehaves raises: connection errors, and the type errors
    of replies that are not what Redis sends (``+OK`` where a number or a set belongs)."""
    try:
        import redis

        return (redis.RedisError, OSError, BrokenRedis, TypeError, ValueError)
    except ImportError:  # pragma: no cover
        return (OSError, BrokenRedis, TypeError, ValueError)


def _as_broken(error: BaseException) -> BaseException:
    if isinstance(error, (TypeError, ValueError)):
        return BrokenRedis(f"a reply that is not what Redis sends ({_short(error)})")
    return error


def describe_spec(spec: str | None) -> str:
    """A spec for a report header: a Redis URL without its password."""
    if spec is None:
        return "none"
    text = str(spec)
    if is_redis(text) and "@" in text:
        scheme, rest = text.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return text
