"""Autotuners a launcher reaches only at run time (tests/unit/test_autotuners.py,
tests/unit/test_discovered_autotuners.py): the launchers import this module when they run, as a
library reached through ``torch.autograd.Function`` or a launch wrapper is, so
``fuzzkern.introspect.autotuners_of`` cannot see them.

Each autotuner benchmarks through ``counting_bench``, which counts its calls in ``BENCH``:
a run that never benchmarks leaves it at 0. ``CustomTuner`` is a user's own ``Autotuner``
subclass with a ``run`` of its own (counted in ``CustomTuner.runs``).
"""

import importlib

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner

BENCH = {"calls": 0}


def counting_bench(fn, quantiles=None, **kwargs):
    """Triton's ``do_bench`` signature: runs the kernel once and times it as 1 ms."""
    BENCH["calls"] += 1
    fn()
    return [1.0, 1.0, 1.0] if quantiles else 1.0


CONFIGS = [triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8}),
           triton.Config({"BLOCK": 16})]


def drop_first(configs, named_args, **kwargs):
    """``early_config_prune``: config 0 is never chosen."""
    return configs[1:]


@triton.autotune(CONFIGS, key=["n"], do_bench=counting_bench,
                 prune_configs_by={"early_config_prune": drop_first})
@triton.jit
def pruned_fill(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], BLOCK, tl.float32), mask=offs < n)


@triton.autotune(CONFIGS, key=["n"], do_bench=counting_bench, reset_to_zero=["out_ptr"])
@triton.jit
def accumulate(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + 1.0, mask=mask)


class CustomTuner(Autotuner):
    runs = 0

    def run(self, *args, **kwargs):  # a user's own run around upstream's (which benchmarks)
        CustomTuner.runs += 1
        return super().run(*args, **kwargs)


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


copy_kernel = CustomTuner(_copy, _copy.arg_names, CONFIGS, ["n"], None, None,
                          do_bench=counting_bench)


def _kernel(name):
    """A kernel of this module, looked up at run time: the launchers name their kernels by
    strings, so no name in their code resolves to one."""
    return vars(importlib.import_module(__name__))[name]


def fill(out):
    _kernel("pruned_fill")[(1,)](out, out.numel())
    return out


def add_one(out):
    _kernel("accumulate")[(1,)](out, out.numel())
    return out


def copy(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _kernel("copy_kernel")[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def _target(reference, min_value=0):
    import fuzzkern
    from fuzzkern import strategies as fks

    return fuzzkern.Target(launcher=copy, reference=reference,
                           inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                           dims={"N": fks.sizes(min_value=min_value, max_value=24)})


#: a target whose only autotuned kernel (``_copy``, three configs, all correct) is reached at
#: run time: the search learns of it from the first case and draws a config for it after
copied = _target(lambda x: x)
#: the same kernel judged against x + 1: every case fails, the first one included
off_by_one = _target(lambda x: x + 1, min_value=1)
