"""Plugin tests run pytest inside pytest (``pytester``, loaded by ``-p pytester`` in the
project's addopts: pytest refuses ``pytest_plugins`` outside the rootdir's conftest), and start
their own redis-server."""

import importlib
import pkgutil
import shutil
import socket
import subprocess
import time
import types

import pytest
import torch  # noqa: F401
import triton  # noqa: F401

import fuzzkern

# In-process pytester runs restore sys.modules afterwards, dropping every module the inner
# session imported. The next inner session would import them again: a second copy of
# triton's C extension aborts the process, and a second copy of a fuzzkern module makes its
# classes differ from those other modules hold. So everything is imported here, before any
# snapshot is taken. (The no-import test runs in a subprocess, where none of this applies.)
for _info in pkgutil.walk_packages(fuzzkern.__path__, "fuzzkern."):
    if not _info.name.endswith("__main__"):
        importlib.import_module(_info.name)
for _name in ("hypothesis.extra.redis", "redis", "safetensors.torch", "xdist"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass

@pytest.fixture(autouse=True)
def _clean_profile_env(monkeypatch):
    """Inner sessions pick their profile from the environment; start every test from none
    (CI services set $CI, which would select the ci profile)."""
    for name in ("CI", "TF_BUILD", "FUZZKERN_PROFILE", "FUZZKERN_GPUS", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    # Wide lines, so pytest's short summary does not cut the messages the tests look for.
    monkeypatch.setenv("COLUMNS", "300")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(redis_server):
    return redis_server.url


@pytest.fixture
def redis_server(tmp_path):
    """A throwaway redis-server on a free loopback port, storing nothing on disk: ``url`` and
    ``proc`` (a test may stop it to see what a dropped database does)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); the CI "
                    "script installs it")
    redis = pytest.importorskip("redis", reason="the redis package is missing: pip install redis")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield types.SimpleNamespace(url=url, proc=proc)
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

