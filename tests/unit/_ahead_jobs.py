"""Specializations of tests/unit/targets/ahead_kernels.py's kernels for sm_90, built the way
Triton's ``JITFunction.run`` builds them, and compile-ahead jobs of them (tests/unit/test_ahead.py
and the subprocesses it starts)."""

import os

from fuzzkern.execution import ahead
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
TARGETS = os.path.join(HERE, "targets", "ahead_kernels.py")
SM90 = ("cuda", 90, 32)
DIVISIBLE = [["tt.divisibility", 16]]


def loaded():
    """(the target's reference, its module) loaded as a worker loads it."""
    (lt,) = loader.load(f"{TARGETS}::double_target")
    module = loader._file_modules[os.path.abspath(TARGETS)]
    return lt.ref, module


def options(**given):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    return dict(vars(make_backend(GPUTarget(*SM90)).parse_options(given)))


def double_spec(module, n=64, index=0):
    """``_double_kernel``'s specialization for config ``index`` and ``n`` (aligned pointers,
    ``n`` divisible by 16 or not), and the launch's arguments by name."""
    at = module._double_kernel
    heur = at.fn
    config = at.configs[index]
    block = config.kwargs["BLOCK"]
    even = n % block == 0
    spec = ahead.Spec(
        heur.fn,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr",
         "EVEN": "constexpr"},
        {(3,): block, (4,): even},
        {(0,): DIVISIBLE, (1,): DIVISIBLE, (2,): DIVISIBLE if n % 16 == 0 else []},
        options(num_warps=config.num_warps, num_stages=config.num_stages), SM90)
    bound = {"x_ptr": "x", "out_ptr": "out", "n": n, "BLOCK": block, "EVEN": even}
    return spec, bound


def broken_spec(module, block):
    return ahead.Spec(
        module._broken_kernel.fn,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        {(3,): block}, {(0,): DIVISIBLE, (1,): DIVISIBLE, (2,): []}, options(), SM90)


def other_config_jobs(cache_dir):
    """Jobs of ``_double_kernel``'s configs 1 to 3 (config 0 launched)."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    ref, module = loaded()
    spec, bound = double_spec(module)
    at = module._double_kernel
    more = ahead.neighbours(spec, configs=tuple(at.configs), config=at.configs[0], bound=bound,
                            heuristics=(at.fn,), flips=False)
    env = dict(get_cache_invalidating_env_vars())
    return [ahead.job_of(s, ref=ref, env=env, cache_dir=cache_dir) for s in more]
