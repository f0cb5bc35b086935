"""Scaling out, the pure parts: which GPU an xdist worker gets, which profile is in force, and
what a database spec opens (Redis itself: tests/pytest/test_shared_database.py)."""

from __future__ import annotations

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

from fuzzkern.errors import FuzzkernError
from fuzzkern.execution.devices import pinned_device, visible_devices, worker_env
from fuzzkern.search import profiles
from fuzzkern.search.database import DatabaseError, check_spec, describe_spec, open_database

# -- GPU pinning -----------------------------------------------------------------------------


@pytest.mark.parametrize("worker, devices, expected", [
    ("gw0", ["0", "1"], "0"),
    ("gw1", ["0", "1"], "1"),
    ("gw2", ["0", "1"], "0"),          # more workers than GPUs: round robin
    ("gw7", ["0", "1", "2", "3"], "3"),
    ("gw1", ["2", "3"], "3"),          # CUDA_VISIBLE_DEVICES=2,3: physical ids pass through
    ("gw0", ["GPU-1a2b", "GPU-3c4d"], "GPU-1a2b"),
    ("gw3", [], None),                 # no GPUs: leave the variable alone
    (None, ["0", "1"], None),          # not under xdist
    ("master", ["0", "1"], None),      # the xdist controller
    ("gwx", ["0"], None),
])
def test_pinned_device(worker, devices, expected):
    assert pinned_device(worker, devices) == expected


def _smi(*lines):
    return lambda: list(lines)


@pytest.mark.parametrize("env, smi, expected", [
    ({}, _smi("GPU 0: NVIDIA H200 (UUID: GPU-a)", "GPU 1: NVIDIA H200 (UUID: GPU-b)"),
     ["0", "1"]),
    ({}, _smi(), []),                                        # no nvidia-smi, or no GPU
    ({}, _smi("No devices were found"), []),
    ({"FUZZKERN_GPUS": "3"}, _smi("GPU 0: x"), ["0", "1", "2"]),   # the override wins
    ({"FUZZKERN_GPUS": "0"}, _smi("GPU 0: x"), []),
    ({"CUDA_VISIBLE_DEVICES": "2,3", "FUZZKERN_GPUS": "8"}, _smi(), ["2", "3"]),
    ({"CUDA_VISIBLE_DEVICES": ""}, _smi("GPU 0: x"), []),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, _smi("GPU 0: x"), []),
    ({"CUDA_VISIBLE_DEVICES": "1,-1,2"}, _smi(), ["1"]),      # CUDA stops at an invalid id
])
def test_visible_devices(env, smi, expected):
    assert visible_devices(env, smi) == expected


def test_bad_fuzzkern_gpus_is_an_error():
    with pytest.raises(FuzzkernError, match="FUZZKERN_GPUS='two'"):
        visible_devices({"FUZZKERN_GPUS": "two"}, _smi())


def test_worker_env():
    assert worker_env("gw1", ["0", "1"]) == {"CUDA_VISIBLE_DEVICES": "1"}
    assert worker_env("gw1", []) == {}
    assert worker_env("", ["0"]) == {}


# -- profiles --------------------------------------------------------------------------------


@pytest.mark.parametrize("option, ini, env, name, source", [
    (None, None, {}, "dev", "default"),
    (None, None, {"CI": "true"}, "ci", "CI detected"),
    (None, None, {"TF_BUILD": "True"}, "ci", "CI detected"),
    (None, "nightly", {"CI": "1"}, "nightly", "fuzzkern_profile ini key"),
    (None, "nightly", {"FUZZKERN_PROFILE": "ci"}, "ci", "$FUZZKERN_PROFILE"),
    ("dev", "nightly", {"FUZZKERN_PROFILE": "ci", "CI": "1"}, "dev", "--fuzzkern-profile"),
])
def test_profile_selection_order(option, ini, env, name, source):
    profile, why = profiles.select(option, ini, env)
    assert (profile.name, why) == (name, source)


def test_unknown_profile_names_the_choices_and_the_source():
    with pytest.raises(FuzzkernError, match=r"among dev, ci, nightly but got profile='ci2' "
                                            r"\(from \$FUZZKERN_PROFILE\)"):
        profiles.select(None, None, {"FUZZKERN_PROFILE": "ci2"})


def test_profiles_register_as_hypothesis_profiles():
    from hypothesis import settings

    assert profiles.effective(profiles.PROFILES["ci"]) == (100, 0)
    ci = settings.get_profile("fuzzkern-ci")
    assert ci.derandomize and ci.database is None and ci.deadline is None
    assert profiles.effective(profiles.PROFILES["nightly"]) == (None, None)
    assert profiles.effective(profiles.PROFILES["dev"]) == (100, None)


# -- database specs --------------------------------------------------------------------------


def test_open_database_specs(tmp_path):
    assert open_database("none") is None
    assert open_database(" None ") is None
    assert open_database(None) is None
    db = open_database(str(tmp_path / "db"))
    assert isinstance(db, DirectoryBasedExampleDatabase)
    ro = open_database(tmp_path / "db", read_only=True)
    assert isinstance(ro, ReadOnlyDatabase)
    db.save(b"k", b"v")
    assert list(ro.fetch(b"k")) == [b"v"]
    ro.save(b"k", b"w")
    assert list(db.fetch(b"k")) == [b"v"]


@pytest.mark.parametrize("spec, message", [
    ("", "Expected a database spec"),
    ("s3://bucket/db", "unknown scheme 's3'"),
    ("redis://localhost:notaport/0", "Expected a URL like redis://host:6379/0|cannot reach"),
])
def test_bad_specs(spec, message):
    pytest.importorskip("redis")
    with pytest.raises(DatabaseError, match=message):
        check_spec(spec)
        open_database(spec, connect_timeout=0.5)


def test_unreachable_redis_is_one_clear_error():
    pytest.importorskip("redis")
    with pytest.raises(DatabaseError, match=r"cannot reach the Redis database at "
                                            r"'redis://127.0.0.1:1/0'.*or pass a folder or `none`"):
        open_database("redis://127.0.0.1:1/0", connect_timeout=0.5)


def test_describe_spec_hides_passwords():
    assert describe_spec("redis://user:secret@host:6379/0") == "redis://***@host:6379/0"
    assert describe_spec("redis://host:6379/0") == "redis://host:6379/0"
    assert describe_spec(None) == "none"
