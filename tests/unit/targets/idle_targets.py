"""A target whose first case cannot finish within its share of a short budget, next to a cheap
one (tests/unit/test_fair_budgets.py): ``compiles_forever`` compiles (simulated, as a kernel
whose autotuner compiles dozens of configs looks to the worker) for a minute per case."""

import time

import fuzzkern
from fuzzkern import strategies as fks

INPUTS = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]))


def _compiles_forever(x):
    with fuzzkern.compile_phase():
        time.sleep(60.0)
    return x * 1


def _copy(x):
    return x * 1


quick = fuzzkern.Target(launcher=_copy, reference=lambda x: x, inputs=INPUTS,
                        dims={"N": fks.sizes(max_value=4)})

compiles_forever = fuzzkern.Target(launcher=_compiles_forever, reference=lambda x: x,
                                   inputs=INPUTS, dims={"N": fks.sizes(max_value=4)},
                                   timeout=5.0)

_compiled_once = []


def _first_compile_slow(x):
    if not _compiled_once:  # the first case in a worker compiles for 30 s, the rest hit its cache
        with fuzzkern.compile_phase():
            time.sleep(30.0)
        _compiled_once.append(True)
    return x * 1


first_compile_slow = fuzzkern.Target(launcher=_first_compile_slow, reference=lambda x: x,
                                     inputs=INPUTS, dims={"N": fks.sizes(max_value=4)},
                                     timeout=5.0)
