"""Frozen corpus entries of every schema version still load, migrated to the current one, and
still replay with the verdict they recorded.

``tests/fixtures/schema_v<N>/`` holds entries written by the fuzzkern of schema version N (the
shrunk failures of the buggy targets in its ``targets.py``) and is never regenerated: the
checksums below pin every file. When :data:`fuzzkern.corpus.store.SCHEMA_VERSION` is bumped,
the old fixtures stay, a migration from the old version is added to ``MIGRATIONS``, and a
``schema_v<new>`` folder is frozen beside them; these tests fail until all three are there.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from fuzzkern.corpus import store as corpus
from fuzzkern.execution.pool import WorkerPool
from tests import corpus_support

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: sha256 of every fixture file: frozen means never rewritten
FROZEN = {
    "schema_v1/targets.py":
        "7291cea2502df7c30775c056dd796a0e693e68d08cdc888574da9ce58fcbabbb",
    "schema_v1/corpus/fixtures.v1.missing_mask/7116c8da624b3bbe.json":
        "bd0ef1d88c02e00a0c930d4719600eb2a7c61e2b06bce953f8e31f9e781bdd9f",
    "schema_v1/corpus/fixtures.v1.missing_mask/7116c8da624b3bbe.safetensors":
        "95c3ffcc00d9861609ebc8ebd5f4792969bea85e52435e4a7bdcc0c78b82d49a",
    "schema_v1/corpus/fixtures.v1.missing_mask/ecc689c1e7416504.json":
        "22a1d8e75afc5a3e85098f41e4526e5b57f5607495de23e3365dc66c49cba1ca",
    "schema_v1/corpus/fixtures.v1.missing_mask/ecc689c1e7416504.safetensors":
        "760215e588e5380556cda8f9067e5fb69b60f5e620203c91b1fc21a3bfda7c9e",
    "schema_v1/corpus/fixtures.v1.nan_out/528ffd1efe91c65c.json":
        "15e2fef0fa6a305a3404c0c4476c5b64b84c564bca5b85dbdc30a9cd90cb25b2",
    "schema_v1/corpus/fixtures.v1.nan_out/528ffd1efe91c65c.safetensors":
        "28a86e9b5579bc727b1c2866b44d39252d9a6af56d65c54d605df7eb2ef6ffb0",
    "schema_v1/corpus/fixtures.v1.wrong_scale/df84861f2e92dc65.json":
        "4431e5395696e3b2b2bda08deeee76f26a4402a9b562f88aff60ddb0eb1448d9",
    "schema_v1/corpus/fixtures.v1.wrong_scale/df84861f2e92dc65.safetensors":
        "2a91eec4fc3b55a9437a6e0178d5c73a893cd129b8c86abd7db3853ac0f4da94",
}


def _entries() -> list[Path]:
    return sorted(FIXTURES.glob("schema_v*/corpus/*/*.json"))


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def test_the_fixtures_are_frozen():
    found = {str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("schema_v*/**/*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert found == set(FROZEN)
    for name, digest in FROZEN.items():
        assert hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() == digest, name


def test_every_schema_version_has_fixtures_and_every_older_one_a_migration():
    versions = sorted(int(p.name.removeprefix("schema_v")) for p in FIXTURES.glob("schema_v*"))
    assert versions == list(range(1, corpus.SCHEMA_VERSION + 1))
    assert sorted(corpus.MIGRATIONS) == list(range(1, corpus.SCHEMA_VERSION))


@pytest.mark.parametrize("path", _entries(), ids=lambda p: f"{p.parents[2].name}/{p.stem}")
def test_a_frozen_entry_loads_migrated_and_replays_with_its_verdict(path, pool):
    raw = json.loads(path.read_text())
    written = int(path.parents[2].name.removeprefix("schema_v"))
    assert raw["schema_version"] == written
    entry = corpus.load(path)
    assert entry.schema_version == corpus.SCHEMA_VERSION
    corpus.check_storages(entry)  # the stored bytes are the bytes the entry was saved with
    assert entry.id == raw["id"] == path.stem
    assert entry.verdict == raw["verdict"]
    assert entry.case.describe() == raw["case_text"]
    result = corpus_support.replay(entry, pool, ref=str(path.parents[2] / "targets.py"))
    assert result.status == corpus.STILL_FAILING, result.reason
    assert result.outcome is not None and result.outcome.verdict == entry.verdict


def test_non_finite_values_of_a_frozen_entry_read_back_as_floats():
    (path,) = FIXTURES.glob("schema_v1/corpus/fixtures.v1.nan_out/*.json")
    raw = json.loads(path.read_text())
    first = raw["outcome"]["modes"]["interpret"]["comparison"]["first"]
    assert [m["got"] for m in first] == [{"$float": "nan"}]
    comparison = corpus.load(path).outcome.modes["interpret"].comparison
    assert comparison is not None
    got = [m.got for m in comparison.first]
    assert got and all(isinstance(v, float) and math.isnan(v) for v in got)
