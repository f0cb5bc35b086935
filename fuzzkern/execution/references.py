"""Float64 references on the device a batch of value variants runs on, checked against the CPU's.

A batch of value variants (:mod:`fuzzkern.execution.batch`) places its inputs on the GPU before
any launch. Where the reference is torch code on float64 copies (``Target.upcast``), it can run
there at float64, on the same widening the CPU path does (floats as float64, complex as
complex128, integers and bool unchanged), and the batched oracle then decides on the device
where outputs and references lie (:func:`fuzzkern.judge.oracle.passes`). A float64 matmul on
the GPU differs from the CPU's by some 1e-16 relative, far below any tolerance fuzzkern applies
to the outputs of a kernel; what must never change is the **verdict**. So:

- only the batched fast path uses the device reference: a variant it does not clear is judged
  by the whole oracle with the CPU reference, exactly as a case run alone is;
- the **parity check**: the first device-judged variant of each case's variants (each new
  shape and layout), the first :data:`FIRST` of each target in a worker, then one in every
  :data:`EVERY`, are also decided with the CPU reference; where the
  two decisions differ, the whole oracle (CPU) decides what the variant's verdict is with each
  reference; a different verdict is a disagreement: it is counted, the batch is decided again
  with CPU references, and that target uses the CPU reference from then on in that worker
  (:attr:`Parity.off` says why). A device reference that raises where the CPU's does not
  turns it off the same way (no disagreement: that variant is judged with the CPU's);
- the counts (:meth:`Parity.since`: ``device``, ``judged``, ``disagreed``) come back with
  the variants' results (``outcome.variants["parity"]``).

The variants of a batch share their shapes, dtypes and scalars, so their references run as
**one call over the variants stacked** (:func:`batched`: ``torch.func.vmap`` of the reference
over a leading dim, one set of device operations for the batch instead of one per variant);
a reference that vmap cannot run (data-dependent control flow, autograd inside, random
numbers) raises there, and from then on each variant's reference of that target runs alone:
on the device where its inputs hold :data:`ALONE_ELEMENTS` elements or more (or with
``"device"``), on the CPU otherwise (a small reference's device operations cost a launch each,
about what the CPU takes to compute them). The parity check compares the verdicts either way.

Which reference (:func:`use_device`): the run option ``reference_device`` and the target's
(``Target(reference_device=...)``; ``"cpu"`` where either says so), ``"auto"`` by default:
the device's on CUDA (float64 supported; ROCm builds report CUDA too), the CPU's elsewhere
(MPS has no float64; any other device and the CPU itself run exactly today's path);
``"cpu"``: always the CPU's; ``"device"``: the device's on any device, the CPU included (how
the tests exercise the device path without a GPU).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fuzzkern.judge.oracle import upcast_for_reference
from fuzzkern.target.declare import REFERENCE_DEVICES

#: device-judged variants of a target that are all also judged with the CPU reference
FIRST = 16
#: ... and after those, one in this many
EVERY = 32
#: the values ``reference_device`` takes (the target's option and the run's)
CHOICES = REFERENCE_DEVICES
#: a reference that cannot run stacked (:func:`batched`) runs on the device, variant by
#: variant, only where a variant's inputs hold this many elements or more (``"auto"``)
ALONE_ELEMENTS = 1 << 16


@dataclass
class Parity:
    """One target's device references in this worker: how many variants were decided with
    one (``device``), how many of those were judged with both (``judged``), how many verdicts
    differed (``disagreed``), and, once the CPU reference is used from then on, why (``off``)."""

    device: int = 0
    judged: int = 0
    disagreed: int = 0
    off: str | None = None
    #: whether the reference runs once over a batch's variants stacked (:func:`batched`):
    #: None until tried, False once it raised (each variant's reference runs alone from then)
    stacked: bool | None = None
    #: whether the next device-judged variant is the first of its case's variants (set when
    #: a case's variants start)
    fresh: bool = False

    def sampled(self) -> bool:
        """Whether the next device-judged variant is also judged with the CPU reference: the
        first of each case's variants (a new shape or layout), the first :data:`FIRST` of
        the target, then one in :data:`EVERY` (and count it as device-judged)."""
        self.device += 1
        take = self.fresh or self.device <= FIRST or self.device % EVERY == 0
        self.fresh = False
        return take

    def counts(self) -> tuple[int, int, int]:
        return self.device, self.judged, self.disagreed

    def since(self, before: tuple[int, int, int]) -> dict[str, Any]:
        """The counts since :meth:`counts` said ``before`` (what one call's variants add), and
        ``off`` when the CPU reference is used from now on."""
        out: dict[str, Any] = {"device": self.device - before[0],
                               "judged": self.judged - before[1],
                               "disagreed": self.disagreed - before[2]}
        if self.off is not None:
            out["off"] = self.off
        return out


_parity: dict[str, Parity] = {}


def parity_of(target: Any) -> Parity:
    """``target``'s parity record in this worker (by its name, else its identity)."""
    key = target.name or f"id:{id(target)}"
    if key not in _parity:
        _parity[key] = Parity()
    return _parity[key]


def choice(target: Any, options: Mapping[str, Any]) -> str:
    """The ``reference_device`` in force from the run's option and the target's: ``"cpu"``
    where either says so, else ``"device"`` where either says so, else ``"auto"``."""
    wanted = {options.get("reference_device") or "auto", target.reference_device}
    unknown = sorted(wanted - set(CHOICES))
    if unknown:
        raise ValueError(f"Expected reference_device to be one of {CHOICES} but got "
                         f"{unknown[0]!r}: 'auto' (the device's float64 reference on CUDA), "
                         "'cpu' (always the CPU's) or 'device' (the device's on any device).")
    return next(c for c in ("cpu", "device", "auto") if c in wanted)


def use_device(target: Any, options: Mapping[str, Any], device: Any) -> bool:
    """Whether a batch of ``target``'s variants on ``device`` decides with references computed
    there: a torch reference on float64 copies, not turned off for this target (by the user
    or a parity disagreement), and a device with float64 (CUDA; any device with
    ``"device"``)."""
    wanted = choice(target, options)
    if wanted == "cpu" or not target.upcast or parity_of(target).off is not None:
        return False
    return wanted == "device" or torch.device(device).type == "cuda"


def alone_on_device(run: Any, options: Mapping[str, Any]) -> bool:
    """Whether ``run``'s reference, when it cannot run stacked, runs alone on the device
    (else on the CPU): with ``"device"``, or inputs of :data:`ALONE_ELEMENTS` elements or
    more."""
    if choice(run.target, options) == "device":
        return True
    return sum(t.numel() for t in run.device_base.values()) >= ALONE_ELEMENTS


def widened(t: torch.Tensor) -> torch.Tensor:
    """:func:`fuzzkern.judge.oracle.upcast_for_reference` on ``t``'s own device: float dtypes
    as float64, complex as complex128, integers and bool unchanged; never aliases."""
    return upcast_for_reference(t, t.device)


def twin(view: torch.Tensor, placed: torch.Tensor, copy: torch.Tensor) -> torch.Tensor:
    """``view`` (a view into the uint8 tensor ``placed``, a block on the device) as the same
    view into ``copy``, a copy of ``placed`` made before any launch: the inputs as placed,
    whatever a launch writes into the block afterwards."""
    if not view.numel():  # (an empty view's data_ptr says nothing of where it lies)
        return view.clone()
    size = view.element_size()
    at = view.data_ptr() - placed.data_ptr()
    return copy.view(view.dtype).as_strided(view.shape, view.stride(), at // size)


def batched(runs: Sequence[Any]) -> bool:
    """Every run's (:class:`fuzzkern.execution.runner._Run`, the variants of one batch, each
    with its :attr:`~fuzzkern.execution.runner._Run.device_base`) float64 reference, and for
    a reduction its magnitude, computed in one call of the reference vmapped over the
    variants' inputs stacked on the device (a leading dim), into ``run.device_expected``.
    False (nothing set) where it raises or returns anything but tensors."""
    from torch.func import vmap

    from fuzzkern.calls import call_with
    from fuzzkern.execution.launching import as_outputs

    first = runs[0]
    names = list(first.device_base)
    reference, scalars = first.target.reference, dict(first.scalars)

    def one(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        got = as_outputs(call_with(reference, {**scalars, **dict(zip(names, tensors,
                                                                     strict=True))}))
        if not got or not all(isinstance(t, torch.Tensor) for t in got):
            raise TypeError("a stacked reference returns tensors only")
        return tuple(got)

    try:
        stacked = [_stacked([run.device_base[n] for run in runs]) for n in names]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # vmap's "no batching rule: a for-loop" notes
            expected = vmap(one)(*stacked)
            magnitude = None
            if first.target.reduction is not None:
                absolute = [t.abs() if t.is_floating_point() or t.is_complex() else t
                            for t in stacked]
                magnitude = vmap(one)(*absolute)
    except Exception:
        return False
    for i, run in enumerate(runs):
        run.device_expected = (tuple(e[i] for e in expected),
                               None if magnitude is None else tuple(m[i] for m in magnitude))
    return True


def _stacked(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The variants' values of one input, widened (:func:`widened`) and stacked along a new
    leading dim, each member with the strides :func:`widened` gives it alone (a transposed
    input stays transposed inside vmap, as the reference sees it alone)."""
    alone = widened(tensors[0])
    size = max(1, alone.untyped_storage().nbytes() // alone.element_size())
    out = torch.empty_strided((len(tensors), *alone.shape), (size, *alone.stride()),
                              dtype=alone.dtype, device=alone.device)
    out.copy_(torch.stack(tensors))
    return out
