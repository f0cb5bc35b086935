"""``--fuzzkern-assume-gpu``: the pytest twin of ``fuzzkern run --assume-gpu`` (fuzzkern/gpus.py).
A test file whose launcher asks torch.cuda for the SM count fails without it on a CPU-only
machine and passes with it."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.skipif(torch.cuda.is_available(),
                                reason="a CUDA GPU answers for itself here")

SM_COUNT = '''
import torch

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.targets.kernels import vector_add

SMS = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.device_count() \\
    else None  # asked at import, as libraries do


def launch(x):
    with torch.cuda.device(x.device):
        out = vector_add(x, x, 64)
        torch.cuda.synchronize()
    return out * torch.cuda.get_device_properties(x.device).multi_processor_count


sm = fuzzkern.Target(launcher=launch, reference=lambda x: 2 * x * 132,
                     inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                     dims={"N": fks.sizes(max_value=64)})


def test_sms_at_import():
    assert SMS == 132
'''


def _run(pytester, *args):
    from fuzzkern.target import loader

    loader._file_modules.clear()
    return pytester.runpytest(*args)


def test_assume_gpu_answers_for_the_whole_session(pytester):
    pytester.makepyfile(test_sm=SM_COUNT)
    # the case count binds, not the dev profile's 10 s (a loaded machine runs the same cases)
    args = ("--fuzzkern-max-examples", "3", "--fuzzkern-budget", "120s", "--fuzzkern-db",
            "none", "-p", "no:randomly")
    result = _run(pytester, *args, "--fuzzkern-assume-gpu", "h200")
    result.assert_outcomes(passed=2)
    without = _run(pytester, *args)
    without.assert_outcomes(failed=2)


def test_an_unknown_gpu_is_a_usage_error(pytester):
    result = _run(pytester, "--fuzzkern-assume-gpu", "B300")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: fuzzkern: --fuzzkern-assume-gpu: Expected the GPU to "
                                 "name a GPU fuzzkern can assume (H200, H100, A100)*"])
