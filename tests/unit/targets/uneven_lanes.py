"""Two targets of very different cost for the parallel schedule (tests/unit/test_run_cli.py):
``quick`` reaches a campaign's ``max_examples`` within its first slice and leaves the
campaign; ``steady`` takes a second per case (a sleep: the same on a loaded machine), so
after the first round it is the only target left, with two processes to keep busy."""

import time

import fuzzkern
from fuzzkern import strategies as fks


def _steady(x):
    time.sleep(1.0)
    return 2 * x


def _inputs():
    return fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False))


quick = fuzzkern.Target(name="lanes.quick", launcher=lambda x: 2 * x,
                        reference=lambda x: 2 * x, inputs=_inputs(),
                        dims={"N": fks.sizes(min_value=1, max_value=8)})
steady = fuzzkern.Target(name="lanes.steady", launcher=_steady, reference=lambda x: 2 * x,
                         inputs=_inputs(), dims={"N": fks.sizes(min_value=1, max_value=8)})
