"""Compile options as a fuzzed dimension (Target(compile_options=...), Case.compile): drawn,
shown, shrunk to Triton's default, kept in corpus JSON only when not default, and checked when
read back (a corpus entry may come from a stranger)."""

import pytest
from hypothesis import HealthCheck, given, settings

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case
from fuzzkern.errors import CaseError, InvalidArgument


def _target(**kw):
    return fuzzkern.Target(launcher=lambda x: x, reference=lambda x: x,
                           inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                           dims={"N": fks.sizes(max_value=8)}, **kw)


def test_num_warps_is_drawn_by_default_and_only_a_non_default_value_is_kept():
    seen = set()

    @settings(max_examples=200, database=None, suppress_health_check=list(HealthCheck))
    @given(_target().cases())
    def draw(case):
        seen.add(tuple(sorted(case.compile.items())))
        assert set(case.compile) <= {"num_warps"}
        assert case.compile.get("num_warps") != 4  # Triton's default is not stored

    draw()
    assert seen == {(), (("num_warps", 1),), (("num_warps", 2),), (("num_warps", 8),)}


def test_compile_options_off_and_chosen():
    off = _target(compile_options={})

    @settings(max_examples=30, database=None)
    @given(off.cases())
    def none(case):
        assert case.compile == {}

    none()
    fused = _target(compile_options={"enable_fp_fusion": [True, False]})
    assert fused.compile_options == {"enable_fp_fusion": (True, False)}
    with pytest.raises(InvalidArgument, match="compile_options"):
        _target(compile_options={"num_warps": [3]})
    with pytest.raises(InvalidArgument, match="compile_options"):
        _target(compile_options={"maxnreg": [32]})


def test_a_case_keeps_its_options_through_json_and_words():
    case = Case({"N": 2}, {"n": 2})
    with_options = Case(case.dims, case.inputs, case.configs, {"num_warps": 2})
    assert Case.from_json(with_options.to_json()) == with_options
    assert "num_warps=2" in with_options.describe()
    assert "compile" not in case.__class__(case.dims, case.inputs).to_json()
    assert with_options.variant(3).compile == {"num_warps": 2}


@pytest.mark.parametrize("bad", [{"num_warps": "__import__('os')"}, {"num_warps": 3},
                                 {"num_warps": True}, {"enable_fp_fusion": 1},
                                 {"debug": True}, ["num_warps"]])
def test_compile_options_read_from_a_corpus_entry_are_checked(bad):
    d = Case({"N": 1}, {}).to_json()
    d["compile"] = bad
    with pytest.raises(CaseError):
        Case.from_json(d)
