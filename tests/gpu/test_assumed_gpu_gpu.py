"""The figures fuzzkern assumes for a GPU (fuzzkern/gpus.py, ``--assume-gpu``) against what the
real one reports: on an H200 (H100, A100), every field ``torch.cuda.get_device_properties``
gives that FlagGems and its peers read. And on a GPU the assumption steps aside: the real GPU
answers, and only ``torch.cuda.device`` of a CPU device (an interpreted launch's) does nothing.

Marked ``gpu``: skipped without CUDA.
"""

import pytest
import torch

from fuzzkern.gpus import GPUS, assumed_gpu

pytestmark = pytest.mark.gpu

FIELDS = ("major", "minor", "multi_processor_count", "L2_cache_size", "warp_size",
          "max_threads_per_multi_processor", "regs_per_multiprocessor",
          "shared_memory_per_block", "shared_memory_per_block_optin",
          "shared_memory_per_multiprocessor")


def _known() -> str:
    name = torch.cuda.get_device_properties(0).name
    for key, props in GPUS.items():
        if props.name == name or key in name:
            return key
    pytest.skip(f"{name} is not among the GPUs fuzzkern assumes ({', '.join(GPUS)})")


def test_the_assumed_figures_are_the_real_gpus():
    key = _known()
    real = torch.cuda.get_device_properties(0)
    mine = GPUS[key]
    differ = {f: (getattr(mine, f), getattr(real, f, None)) for f in FIELDS
              if getattr(real, f, None) is not None and getattr(mine, f) != getattr(real, f)}
    assert not differ, f"{key}: assumed vs real {differ}"
    assert abs(mine.total_memory - real.total_memory) < 0.05 * real.total_memory


def test_on_a_gpu_the_real_one_answers_and_a_cpu_device_context_does_nothing():
    real = torch.cuda.get_device_properties(0).name
    with pytest.raises(ValueError, match="Expected a cuda device"):
        torch.cuda.device(torch.device("cpu"))
    with assumed_gpu("A100") as assumed:
        assert assumed is None
        assert torch.cuda.get_device_properties(0).name == real
        with torch.cuda.device(torch.device("cpu")):  # an interpreted launch's tensors
            assert torch.cuda.current_device() == 0
        with torch.cuda.device(torch.device("cuda:0")):
            assert torch.cuda.current_device() == 0
    with pytest.raises(ValueError, match="Expected a cuda device"):
        torch.cuda.device(torch.device("cpu"))
