"""Float64 references on the device of a batch of value variants, with their parity check
(fuzzkern.execution.references), on the CPU: ``reference_device="device"`` takes the device
path on any device, the CPU included, so launchers written in plain torch stand in for
kernels.

The contract: with the device path, a batch says of every variant what the CPU path says
(the same first failing variant, verdict and message, the same counts); a sample of variants
is judged with both references and counted; a reference whose device result differs from its
CPU result in a way that changes a verdict is caught, counted, gets the CPU's verdict, and
turns the device references off for that target; the CPU path is today's.
"""

from __future__ import annotations

import pytest
import torch

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.execution import references
from fuzzkern.execution.runner import run_variants

CPU = torch.device("cpu")
DEVICE = {"modes": ["compiled"], "reference_device": "device"}
HOST = {"modes": ["compiled"], "reference_device": "cpu"}


@pytest.fixture(autouse=True)
def _fresh_parity(monkeypatch):
    # each test's targets start with no parity record in this process
    monkeypatch.setattr(references, "_parity", {})


def _target(name, launcher, reference, reduction=None, dims=("N",), dtype="float32", **kw):
    return fuzzkern.Target(name=name, launcher=launcher, reference=reference,
                           inputs=fks.inputs(x=fks.tensors(dims, dtypes=[dtype])),
                           dims={d: fks.sizes(max_value=64) for d in dims},
                           reduction=reduction, modes=("interpret", "compiled"), **kw)


def _case(shape=(24,), layout=None, distribution="normal", dtype="float32"):
    x = TensorCase.build(shape, dtype, layout or Layout.contiguous(len(shape)),
                         Values(seed=11, distribution=distribution))
    return Case(dict(zip("NM", shape, strict=False)), {"x": x})


def _double(x):
    out = torch.empty_like(x)
    out.copy_(2 * x)
    return out


def _drops_large(x):  # wrong only where a value exceeds 2: a bug some variants show
    out = torch.empty_like(x)
    out.copy_(torch.where(x > 2.0, 0.0, 2 * x))
    return out


def _doubles_in_place(x):
    x.mul_(2)


def _row_sum(x):
    out = torch.empty(x.shape[0], dtype=x.dtype)
    out.copy_(x.sum(dim=1))
    return out


def _branches(x):  # data-dependent control flow: vmap cannot stack it, alone it runs
    return 2 * x if not bool((x > 1e9).any()) else x


CASES = [
    ("double", _double, lambda x: 2 * x, {}, _case()),
    ("branches", _double, _branches, {}, _case()),
    ("drops_large", _drops_large, lambda x: 2 * x, {}, _case()),
    ("strided", _double, lambda x: 2 * x, {},
     _case(layout=Layout((0,), (3,), (0,), 5, ()))),
    ("in_place", _doubles_in_place, lambda x: 2 * x, {"inplace": "x"}, _case()),
    ("row_sum", _row_sum, lambda x: x.sum(dim=1), {"reduction": "M", "dims": ("N", "M")},
     _case(shape=(6, 40))),
]


def _strip(got):
    out = {k: v for k, v in got.items() if k not in ("seconds", "parity")}
    if "failed" in out:
        f = out["failed"]
        out["failed"] = (f["index"], f["outcome"]["verdict"], f["outcome"]["message"])
    return out


@pytest.mark.parametrize("name,launcher,reference,kw,case", CASES,
                         ids=[c[0] for c in CASES])
def test_the_device_path_says_what_the_cpu_path_says(name, launcher, reference, kw, case):
    target = _target(f"t.{name}", launcher, reference, **kw)
    theirs = run_variants(target, case, HOST, 1e9, 60, device=CPU)
    ours = run_variants(target, case, DEVICE, 1e9, 60, device=CPU)
    assert _strip(ours) == _strip(theirs)
    assert "parity" not in theirs
    parity = ours["parity"]
    assert parity["device"] >= 1 and parity["disagreed"] == 0 and "off" not in parity
    # every device-judged variant up to FIRST is judged both ways, then one in EVERY
    n = parity["device"]
    assert parity["judged"] == min(n, references.FIRST) + sum(
        1 for i in range(references.FIRST + 1, n + 1) if i % references.EVERY == 0)
    # the batch's references ran in one call over the variants stacked, except where the
    # reference branches on values (then each variant's alone, on the device still)
    assert references.parity_of(target).stacked is (name != "branches")


def test_the_parity_sample_is_the_first_variants_then_a_fraction():
    p = references.Parity()
    sampled = [i for i in range(1, 201) if p.sampled()]
    assert sampled == [*range(1, references.FIRST + 1),
                       *range(references.EVERY, 201, references.EVERY)]
    assert p.device == 200


def _first_call_right():
    """A reference whose first result for given inputs (the device's, computed first) is
    2x, and every later one (the CPU's) 2x + 1: its device result differs from its CPU
    result by construction. (Integers: compared exactly, no conditioning evidence that a
    reference which is not a function of its inputs would confuse.)"""
    seen: set[tuple[int, ...]] = set()

    def reference(x):
        key = tuple(x.reshape(-1).tolist())
        bias = 1 if key in seen else 0
        seen.add(key)
        return 2 * x + bias

    return reference


INTS = {"dtype": "int32"}


def test_a_disagreement_is_caught_counted_and_the_cpu_reference_used_from_then_on():
    target = _target("t.differs", _double, _first_call_right(), **INTS)
    got = run_variants(target, _case(distribution="small_ints", **INTS), DEVICE, 1e9, 60,
                       device=CPU)
    # the device's reference passes variant 1, the CPU's fails it: the CPU's verdict stands
    assert got["failed"]["index"] == 1
    outcome = got["failed"]["outcome"]
    assert outcome["verdict"] == "kernel-bug"
    assert "differed from the CPU's (mismatch on the CPU)" in \
        outcome["modes"]["compiled"]["detail"]["reference"]
    # the first batch's 8 variants are all in the sample, and all disagree
    assert got["parity"] == {"device": 8, "judged": 8, "disagreed": 8,
                             "off": outcome["modes"]["compiled"]["detail"]["reference"]}
    assert "variant 1:" in got["parity"]["off"]
    assert references.parity_of(target).off is not None
    # from then on, in this worker, the target's variants are decided with the CPU reference
    # only (this reference's first call per input is then the CPU's: every variant passes)
    again = run_variants(target, _case(distribution="uniform", **INTS), DEVICE, 1e9, 30,
                         device=CPU)
    assert again["ran"] == 30 and "failed" not in again
    assert again["parity"]["device"] == 0 and again["parity"]["judged"] == 0
    assert "off" in again["parity"]


def test_a_disagreement_decides_the_unsampled_variants_of_its_batch_with_the_cpu_reference(
        monkeypatch):
    # only the first variant is in the sample; the others of its batch were cleared with
    # device references (first calls, 2x): decided again with the CPU's, they fail too, so
    # nothing of the batch passes on the device's evidence
    monkeypatch.setattr(references, "FIRST", 1)
    target = _target("t.differs2", _double, _first_call_right(), **INTS)
    got = run_variants(target, _case(distribution="small_ints", **INTS), DEVICE, 1e9, 8,
                       device=CPU)
    assert got["ran"] == 0 and got["failed"]["index"] == 1
    assert got["parity"]["judged"] == 1 and got["parity"]["disagreed"] == 1


def test_a_reference_that_raises_on_the_device_only_turns_the_device_off():
    calls = []

    def reference(x):
        # the first two calls raise: the batch's stacked one, then variant 1's alone on the
        # device; the CPU's for variant 1 is the third
        calls.append(x)
        if len(calls) <= 2:
            raise RuntimeError("Expected all tensors to be on the same device")
        return 2 * x

    target = _target("t.raises", _double, reference)
    got = run_variants(target, _case(), DEVICE, 1e9, 20, device=CPU)
    assert got["ran"] == 20 and "failed" not in got
    assert got["parity"]["disagreed"] == 0
    assert "raised on cpu but not on the CPU (variant 1)" in got["parity"]["off"]


def test_a_reference_that_raises_everywhere_is_a_reference_error_as_on_the_cpu():
    def reference(x):
        raise ValueError("no reference for this")

    target = _target("t.error", _double, reference)
    theirs = run_variants(target, _case(), HOST, 1e9, 5, device=CPU)
    ours = run_variants(target, _case(), DEVICE, 1e9, 5, device=CPU)
    assert _strip(ours) == _strip(theirs)
    assert ours["failed"]["outcome"]["verdict"] == theirs["failed"]["outcome"]["verdict"]
    assert references.parity_of(target).off is None  # not the device's fault


def test_the_cpu_path_is_taken_on_the_cpu_by_default_and_when_asked():
    for options in ({"modes": ["compiled"]}, HOST):
        target = _target("t.auto", _double, lambda x: 2 * x)
        got = run_variants(target, _case(), options, 1e9, 20, device=CPU)
        assert got["ran"] == 20 and "parity" not in got
    assert not references.use_device(target, {}, CPU)
    assert references.use_device(target, {}, torch.device("cuda", 0))
    assert not references.use_device(target, {"reference_device": "cpu"}, torch.device("cuda"))
    assert not references.use_device(_target("t.raw", _double, lambda x: 2 * x, upcast=False),
                                     {}, torch.device("cuda"))


def test_a_wrong_reference_device_says_what_it_takes():
    target = _target("t.bad_option", _double, lambda x: 2 * x)
    with pytest.raises(ValueError, match="one of .'auto', 'cpu', 'device'. but got 'gpu'"):
        references.use_device(target, {"reference_device": "gpu"}, CPU)


def test_a_twin_view_reads_the_placed_bytes_after_the_block_is_written():
    block = torch.arange(64, dtype=torch.uint8)
    view = block[16:48].view(torch.float32).as_strided((2, 3), (1, 2), 1)
    before = view.clone()
    copy = block.clone()
    twin = references.twin(view, block, copy)
    view.fill_(7.0)
    assert torch.equal(twin, before) and twin.stride() == view.stride()


def test_a_passing_variant_on_the_device_path_never_makes_its_cpu_inputs(monkeypatch):
    # the struct-of-arrays batch: a variant's CPU inputs are rows of the batch's stacked
    # values, made into tensors of their own only when read (the CPU path reads them all)
    from fuzzkern.execution import compiled

    made = []
    original = compiled.VariantInputs.__getitem__

    def spy(self, name):
        made.append(name)
        return original(self, name)

    monkeypatch.setattr(compiled.VariantInputs, "__getitem__", spy)
    target = _target("t.lazy", _double, lambda x: 2 * x)
    got = run_variants(target, _case(), DEVICE, 1e9, 40, device=CPU)
    assert got["ran"] == 40
    # only the parity sample's CPU references read them
    assert len(made) == got["parity"]["judged"]
    made.clear()
    run_variants(target, _case(), HOST, 1e9, 40, device=CPU)
    assert len(made) >= 40


def test_empty_and_expanded_inputs_take_the_device_path_as_the_cpu_path():
    # an empty tensor (no bytes to twin) and an expanded one (stride 0: stacked, it is
    # materialized) judged the same both ways
    target = _target("t.empty", _double, lambda x: 2 * x, dims=("N", "M"))
    for shape, layout in (((0, 5), None), ((4, 6), Layout((0, 1), (1, 1), (0, 0), 1, (0,)))):
        case = _case(shape=shape, layout=layout)
        theirs = run_variants(target, case, HOST, 1e9, 20, device=CPU)
        ours = run_variants(target, case, DEVICE, 1e9, 20, device=CPU)
        assert _strip(ours) == _strip(theirs)
        assert ours["parity"]["disagreed"] == 0 and ours["parity"]["device"] >= 1


def test_the_first_variant_of_every_case_is_in_the_sample():
    target = _target("t.fresh", _double, lambda x: 2 * x)
    first = run_variants(target, _case(), DEVICE, 1e9, references.FIRST + 4, device=CPU)
    assert first["parity"]["judged"] == references.FIRST
    # a new case (here, new values; in a run, a new shape or layout): its first variant is
    # judged both ways though the target is past its first FIRST
    second = run_variants(target, _case(distribution="uniform"), DEVICE, 1e9, 8, device=CPU)
    assert second["parity"] == {"device": 8, "judged": 1, "disagreed": 0}


def _flat_double(x):  # a reference that needs a contiguous input (view), as some do
    return (x.view(-1) * 2).view(x.shape)


def test_a_transposed_input_reaches_a_stacked_reference_with_its_own_strides():
    # the reference raises on a transposed input alone (view of a non-contiguous tensor):
    # stacked over the batch's variants it must raise too, not pass on a contiguous copy
    target = _target("t.transposed", _double, _flat_double, dims=("N", "M"))
    transposed = _case(shape=(5, 7), layout=Layout((1, 0), (1, 1), (0, 0), 0, ()))
    theirs = run_variants(target, transposed, HOST, 1e9, 10, device=CPU)
    ours = run_variants(target, transposed, DEVICE, 1e9, 10, device=CPU)
    assert theirs["failed"]["outcome"]["verdict"] == "reference-error"
    assert _strip(ours) == _strip(theirs)
    assert "off" not in ours.get("parity", {})  # raised on both: no fault of the device
    # (stacking raised, so this target's references run alone from now on)
    assert references.parity_of(target).stacked is False
    # a contiguous input: the same reference runs stacked
    other = _target("t.contiguous", _double, _flat_double, dims=("N", "M"))
    fine = run_variants(other, _case(shape=(5, 7)), DEVICE, 1e9, 10, device=CPU)
    assert fine["ran"] == 10 and references.parity_of(other).stacked is True


def test_the_target_and_the_run_choose_together_and_cpu_wins():
    auto = _target("t.c1", _double, lambda x: 2 * x)
    on_cpu = _target("t.c2", _double, lambda x: 2 * x, reference_device="cpu")
    cuda = torch.device("cuda")
    assert not references.use_device(on_cpu, {}, cuda)
    assert not references.use_device(on_cpu, {"reference_device": "device"}, cuda)
    assert references.use_device(_target("t.c3", _double, lambda x: 2 * x,
                                         reference_device="device"), {}, CPU)
    assert references.choice(auto, {"reference_device": "device"}) == "device"
    got = run_variants(on_cpu, _case(), DEVICE, 1e9, 10, device=CPU)
    assert got["ran"] == 10 and "parity" not in got


def _out_of_memory(*args, **kwargs):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore text")


@pytest.mark.parametrize("where", ["twin", "decide", "stacked"])
def test_a_failure_of_the_device_path_leaves_the_batch_to_the_cpu_and_says_so(where,
                                                                               monkeypatch):
    # a fault injected where only the device path goes: the variants get the verdicts the
    # CPU path gives them (no error verdict, no lost variant), and the reason is said
    from fuzzkern.execution import batch

    targets = [_target(f"t.{where}.{launcher.__name__}", launcher, lambda x: 2 * x)
               for launcher in (_double, _drops_large)]
    before = [run_variants(t, _case(), HOST, 1e9, 40, device=CPU) for t in targets]
    if where == "twin":
        monkeypatch.setattr(batch, "twin", _out_of_memory)
    elif where == "decide":  # the fast path fails where a reference was the device's
        passes = batch._passes

        def fails_on_device(pending, refs):
            if any(p.device for p in pending):
                _out_of_memory()
            return passes(pending, refs)

        monkeypatch.setattr(batch, "_passes", fails_on_device)
    else:
        monkeypatch.setattr(references, "_stacked", _out_of_memory)
    for target, theirs in zip(targets, before, strict=True):
        ours = run_variants(target, _case(), DEVICE, 1e9, 40, device=CPU)
        assert _strip(ours) == _strip(theirs)
        if where == "stacked":  # each variant's reference alone, on the device still
            assert references.parity_of(target).stacked is False
            assert ours["parity"]["device"] >= 1 and "off" not in ours["parity"]
        else:
            assert "CUDA out of memory. Tried to allocate 2.00 GiB" in ours["parity"]["off"]
            assert "more text" not in ours["parity"]["off"]


def test_a_reference_that_cannot_stack_runs_alone_on_the_device_only_for_large_inputs(
        monkeypatch):
    # "auto" on a device that takes the device path (use_device stands in for CUDA here):
    # small inputs' references that cannot run stacked go back to the CPU, large ones stay
    from fuzzkern.execution import batch

    monkeypatch.setattr(batch, "use_device", lambda target, options, device: True)
    auto = {"modes": ["compiled"]}
    small = _target("t.small", _double, _branches, dims=("N",))
    got = run_variants(small, _case(), auto, 1e9, 12, device=CPU)
    assert got["ran"] == 12 and "parity" not in got  # every reference the CPU's
    assert references.parity_of(small).stacked is False
    large = _target("t.large", _double, _branches, dims=("N",))
    n = references.ALONE_ELEMENTS
    got = run_variants(large, _case(shape=(n,)), auto, 1e9, 12, device=CPU)
    assert got["ran"] == 12 and got["parity"]["device"] == 12
