"""Autotuners the way libraries write them, for forcing configs (tests/unit/test_autotuners.py).

``LibStyleTuner`` follows FlagGems' ``LibTuner``: an ``Autotuner`` subclass with its own ``run``
that benchmarks, and a cache that is a mapping-like store (a database in FlagGems), not a dict:
``dict(cache)`` raises, as FlagGems' ``ConfigCache`` does. ``scale`` is autotuned by Triton's
own decorator under ``@triton.heuristics``, as Liger and fla write it.
"""

import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner


class ConfigStore:
    """Keys to configs in a store with no ``keys()`` and no iteration (like FlagGems')."""

    def __init__(self):
        self._rows = {}
        self.writes = 0

    def __contains__(self, key):
        return key in self._rows

    def __getitem__(self, key):
        if isinstance(key, int):  # what dict(store) ends up asking: refused as FlagGems does
            raise TypeError("'int' object is not iterable")
        return self._rows[key]

    def __setitem__(self, key, config):
        self.writes += 1
        self._rows[key] = config


class LibStyleTuner(Autotuner):
    benchmarked = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cache = ConfigStore()

    def run(self, *args, **kwargs):  # benchmarks every config, as a library's tuner does
        LibStyleTuner.benchmarked += 1
        key = tuple(args[i] for i, n in enumerate(self.arg_names) if n in self.keys)
        if key not in self.cache:
            self.cache[key] = self.configs[-1]
        config = self.cache[key]
        return self.fn.run(*args, **kwargs, **config.all_kwargs())


def libtune(configs, key):
    def decorator(fn):
        return LibStyleTuner(fn, fn.arg_names, configs, key, None, None)

    return decorator


CONFIGS = [triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8}),
           triton.Config({"BLOCK": 16})]


@libtune(CONFIGS, key=["n"])
@triton.jit
def lib_fill(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], BLOCK, tl.float32), mask=offs < n)


@triton.heuristics({"EVEN": lambda args: args["n"] % 2 == 0})
@triton.autotune(CONFIGS, key=["n"])
@triton.jit
def scale(out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], BLOCK, tl.float32) + EVEN, mask=offs < n)
