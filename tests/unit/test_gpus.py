"""A declared GPU for CPU-only runs (fuzzkern/gpus.py): torch.cuda's host queries answer as that
GPU would while it is assumed, and nothing else changes."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, TensorCase
from fuzzkern.cli import main
from fuzzkern.errors import InvalidArgument
from fuzzkern.execution.runner import run_case
from fuzzkern.gpus import GPUS, assumed_gpu, check_gpu_name, current_assumption
from fuzzkern.targets.kernels import vector_add

pytestmark = pytest.mark.skipif(torch.cuda.is_available(),
                                reason="a CUDA GPU answers for itself here")


def test_the_queries_libraries_make_answer_as_an_h200():
    with assumed_gpu("h200") as name:
        assert name == "H200" and current_assumption() == "H200"
        assert torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        assert (props.name, props.multi_processor_count) == ("NVIDIA H200", 132)
        assert torch.cuda.get_device_capability() == (9, 0)
        assert torch.cuda.get_device_name(0) == "NVIDIA H200"
        with torch.cuda.device(torch.device("cpu")):  # a CPU tensor's device: no error
            torch.cuda.synchronize()
        stream = torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            stream.synchronize()
        assert not torch.cuda.is_available()  # tensors stay on the CPU
        with assumed_gpu("A100"):
            assert torch.cuda.get_device_properties(0).multi_processor_count == 108
        assert torch.cuda.get_device_capability() == (9, 0)
    assert current_assumption() is None
    assert torch.cuda.device_count() == 0
    with pytest.raises((AssertionError, RuntimeError)):
        torch.cuda.get_device_properties(0)


def test_none_assumes_nothing_and_an_unknown_gpu_is_refused_with_the_list():
    with assumed_gpu(None) as name:
        assert name is None and torch.cuda.device_count() == 0
    with pytest.raises(InvalidArgument, match="H200, H100, A100.*'B300'"):
        check_gpu_name("B300")
    assert set(GPUS) == {"H200", "H100", "A100"}


def _sm_scaled(x):
    """Host code as libraries write it: a device context, the SM count, a synchronize."""
    with torch.cuda.device(x.device):
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        out = vector_add(x, x, 64)
        torch.cuda.synchronize()
    return out * sms


def _target(**options):
    return fuzzkern.Target(launcher=_sm_scaled, reference=lambda x: 2 * x * 132,
                           inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                           dims={"N": fks.sizes(max_value=100)}, **options)


def test_a_target_declares_the_gpu_its_host_code_is_written_for():
    case = Case({"N": 70}, {"x": TensorCase.build((70,), "float32")})
    assert _target(assume_gpu="h200").assume_gpu == "H200"
    outcome = run_case(_target(assume_gpu="H200"), case, {"modes": ["interpret"]})
    assert outcome.verdict == "pass", outcome.message
    plain = run_case(_target(), case, {"modes": ["interpret"]})
    assert plain.verdict == "error" and "cuda" in plain.message.lower(), plain.message
    # the run's option does the same for a target that declares nothing
    assert run_case(_target(), case, {"modes": ["interpret"], "assume_gpu": "H200"}
                    ).verdict == "pass"
    assert torch.cuda.device_count() == 0  # only while the case ran
    with pytest.raises(InvalidArgument, match="assume_gpu"):
        _target(assume_gpu="TPU")


def test_the_cli_refuses_an_unknown_gpu_in_one_line():
    result = CliRunner().invoke(main, ["run", "--assume-gpu", "B300", "--budget", "1s"])
    assert result.exit_code == 2
    assert "--assume-gpu" in result.output and "H200, H100, A100" in result.output


def test_where_a_gpu_is_present_only_a_cpu_device_context_is_tolerated():
    """What ``assumed_gpu`` installs where CUDA is present (tests/gpu has it on the GPU): the
    real ``torch.cuda.device``, but a CPU device (an interpreted launch's tensors) is no
    device change instead of a ValueError."""
    from fuzzkern.gpus import _cpu_tolerant

    with pytest.raises(ValueError, match="Expected a cuda device"):
        torch.cuda.device(torch.device("cpu"))
    device = _cpu_tolerant(torch.cuda.device)["device"]
    for cpu in (torch.device("cpu"), "cpu"):
        context = device(cpu)
        with context:
            pass
        assert isinstance(context, torch.cuda.device) and context.idx == -1
