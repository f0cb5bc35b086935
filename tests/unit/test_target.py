"""A Target whose inputs do not fit its callables' parameters is rejected at definition."""

from __future__ import annotations

import pytest

import fuzzkern
from fuzzkern import strategies as fks

INPUTS = fks.inputs(x=fks.tensors(("N",)), y=fks.tensors(("N",), dtype_of="x"))
DIMS = {"N": fks.sizes(max_value=8)}


def add(x, y):
    return x + y


def test_a_fitting_target_is_accepted():
    t = fuzzkern.Target(launcher=add, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
    assert t.inputs is INPUTS
    # parameters with defaults, **kwargs and inputs only one callable takes are fine
    fuzzkern.Target(launcher=lambda x, y, BLOCK=64: x + y, reference=lambda **kw: kw["x"],
                    inputs=INPUTS, dims=DIMS)
    fuzzkern.Target(launcher=add, reference=lambda x: 2 * x, inputs=INPUTS, dims=DIMS)


def test_a_launcher_parameter_no_input_defines_is_rejected():
    def launch(a, b):
        return a + b

    with pytest.raises(fuzzkern.InvalidArgument) as e:
        fuzzkern.Target(launcher=launch, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
    assert str(e.value).startswith(
        "The launcher test_a_launcher_parameter_no_input_defines_is_rejected.<locals>.launch"
        "(a, b) needs 'a', 'b', which the inputs do not define (inputs: 'x', 'y').")


def test_a_reference_parameter_no_input_defines_is_rejected():
    with pytest.raises(fuzzkern.InvalidArgument, match=r"The reference .*\(x, z\) needs 'z'"):
        fuzzkern.Target(launcher=add, reference=lambda x, z: x + z, inputs=INPUTS, dims=DIMS)


def test_an_input_neither_callable_takes_is_rejected():
    with pytest.raises(fuzzkern.InvalidArgument,
                       match=r"'y' is neither \(launcher\(x\), reference\(x\)\)"):
        fuzzkern.Target(launcher=lambda x: x, reference=lambda x: x, inputs=INPUTS, dims=DIMS)


def test_positional_only_parameters_cannot_receive_inputs():
    def launch(x, y, /):
        return x + y

    with pytest.raises(fuzzkern.InvalidArgument, match="needs 'x', 'y'"):
        fuzzkern.Target(launcher=launch, reference=add, inputs=INPUTS, dims=DIMS)
