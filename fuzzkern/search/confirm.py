"""Confirmation: before a failure is reported as the kernel's, its shrunk case runs once more
as a user's plain call would run it.

fuzzkern instruments every case: poisoned and red-zoned allocations, the interpreter's bounds
and view checkers, the debug knob, configs forced on autotuners. A finding that needs that
instrumentation to appear is not the kernel's: it is a **fuzzkern limitation**
(``fuzzkern-limit``), reported apart, never saved to the corpus, never counted as a failure.

:func:`confirm` re-runs the case with every check off (``checks``), no debug knob, and one
launch. Configs stay forced (one config per case is what fuzzkern tests); but an error raised in
fuzzkern's own code (:func:`fuzzkern.judge.frames.raised_at`) on the way to an autotuned
kernel also runs with the autotuner making its own choice (``unforced``), compiled mode only:
the interpreter cannot benchmark. The memory-safety verdicts are not confirmed: their detector
is the instrumentation.

- the plain run fails the same way, and the error is not fuzzkern's: the failure stands;
- the plain run passes: the check(s) the failure needs are found (each turned on alone).
  Poison, red zones and the debug knob detect the kernel's own bugs (an uninitialized read, a
  read past an allocation, a device assert): the failure stands, with a line saying so. Any
  other check, or none alone: a limitation, naming it and how to turn it off
  (``--no-check NAME``, ``Target(checks=...)``);
- the error is raised in fuzzkern's own code and the unforced run passes (or nothing else
  is at fault): a limitation, naming fuzzkern's frame;
- an exception escaped fuzzkern's worker (the runner turns what a launcher or kernel raises
  into a mode's result, so what escapes it is fuzzkern's): a limitation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fuzzkern.judge.frames import raised_at
from fuzzkern.judge.outcome import Outcome, Verdict
from fuzzkern.judge.verdict import verdict_family
from fuzzkern.target.declare import DEFAULT_CHECKS

if TYPE_CHECKING:  # pragma: no cover
    from fuzzkern.case.model import Case
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.target.declare import Target

#: verdicts whose detector is fuzzkern's instrumentation itself: never confirmed without it
DETECTED_BY_INSTRUMENTATION = frozenset(
    {Verdict.OOB, Verdict.OOB_VIEW, Verdict.OOB_WRITE, Verdict.UNWRITTEN_OUTPUT,
     Verdict.INPUT_MUTATED, Verdict.OVERFLOW, Verdict.HANG})

#: what each check is, in a limitation's words
CHECK_WORDS = {"bounds": "the interpreter's bounds checker", "view": "the view checker",
               "view_strict": "the strict view checker",
               "poison": "poisoned torch.empty memory", "mutation": "the input-mutation check",
               "redzone": "red zones around allocations"}


@dataclass
class Confirmation:
    #: why the failure is fuzzkern's, not the kernel's (None: it stands)
    limit: str | None = None
    #: a line for the explanations (e.g. the plain run failed another way)
    line: str | None = None


def plain_options(run_options: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """``run_options`` as a plain call runs: every check off, no debug knob, one launch."""
    out = {**run_options, "checks": {name: False for name in DEFAULT_CHECKS}, "debug": False,
           "repeat_compiled": 1, **extra}
    out.pop("variants", None)
    return out


def _error_mode(outcome: Outcome) -> Any:
    return next((m for m in outcome.modes.values()
                 if m.status in ("error", "compile-error", "crash") and m.detail.get("traceback")),
                None)


def confirm(ref: str, case: Case, outcome: Outcome, pool: WorkerPool,
            run_options: Mapping[str, Any], target: Target, timeout: float) -> Confirmation:
    """Whether the failure ``outcome`` of ``case`` is the kernel's (see the module doc)."""
    if outcome.verdict in DETECTED_BY_INSTRUMENTATION or not outcome.failed:
        return Confirmation()
    if outcome.verdict == Verdict.NONDETERMINISTIC:
        return Confirmation()  # repeats are its detector; red zones and poison do not vary
    harness = outcome.modes.get("harness")  # an exception escaped fuzzkern's own worker code
    what = outcome.message.removeprefix("fuzzkern worker error: ").splitlines()[0][:240]
    if harness is not None and not what.startswith(("SystemExit", "KeyboardInterrupt")):
        # (the runner turns whatever the launcher and kernel raise into a mode's result: what
        # escapes it is fuzzkern's to handle, unless the case's own code raised it: a tensor
        # subclass whose every torch function raises, returned as an output, made every case
        # a fuzzkern-limit, the run green with the bug missed)
        site = raised_at(str(harness.error or ""))
        words = site.words()
        if site.own and not site.by_fuzzkern:
            return Confirmation(line=f"{words}: in the case's own code, while fuzzkern's "
                                "worker handled the case's results (the case's error, not "
                                "fuzzkern's)")
        return Confirmation(limit=f"fuzzkern's own worker code failed on this case ({what}"
                            f"{'; ' + words if words else ''}): a fuzzkern defect, not the "
                            "kernel's")
    erred = _error_mode(outcome)
    where = raised_at(str(erred.detail["traceback"])) if erred is not None else None
    family = verdict_family(outcome.verdict)
    plain = pool.run(ref, case.to_json(), plain_options(run_options), timeout)
    if plain.verdict == Verdict.PASS:
        return _needs_checks(ref, case, outcome, pool, run_options, target, timeout)
    if where is None or not where.by_fuzzkern:
        if plain.failed and verdict_family(plain.verdict) != family:
            return Confirmation(line=f"as a plain call (no checks) it fails as {plain.verdict} "
                                f"instead: {plain.message.splitlines()[0][:200]}")
        return Confirmation()
    # raised in fuzzkern's own code
    mine = f"the {outcome.verdict} is {where.words()}"
    if case.configs and "compiled" in (run_options.get("modes") or ()):
        own = pool.run(ref, case.to_json(), plain_options(run_options, unforced=True),
                       timeout)
        if not own.failed:
            return Confirmation(limit=f"fuzzkern could not force a config on this autotuner: "
                                f"{mine}; with the autotuner choosing its own config the case "
                                "passes")
    return Confirmation(limit=f"{mine}: a fuzzkern defect, not the kernel's")


#: checks that detect the kernel's own bug when a failure needs them: poison (a read of memory
#: torch.empty left uninitialized), red zones (a read past an allocation), the debug knob
#: (device asserts, the overflow check)
DETECTORS = {"poison": "it reads memory torch.empty leaves uninitialized (fuzzkern fills it "
                       "with poison; a plain call passes only while that memory happens to "
                       "hold harmless values)",
             "redzone": "it reads past an allocation (into fuzzkern's red zone; a plain call "
                        "passes only while the bytes there happen to be harmless)",
             "debug": "it fails only with the debug knob (device asserts, the overflow check)"}


def _needs_checks(ref: str, case: Case, outcome: Outcome, pool: WorkerPool,
                  run_options: Mapping[str, Any], target: Target,
                  timeout: float) -> Confirmation:
    """For a failure that passes as a plain call: which checks it needs, each turned on alone.
    Poison, red zones and debug are detectors of the kernel's own bugs (the failure stands,
    with a line saying why); anything else is a limitation."""
    from fuzzkern.execution.launching import checks_of

    on = [name for name, v in checks_of(run_options, target).items() if v]
    if run_options.get("debug"):
        on.append("debug")
    needed = []
    for name in on:
        extra: dict[str, Any] = ({"debug": True} if name == "debug"
                                 else {"checks": {**{n: False for n in DEFAULT_CHECKS},
                                                  name: True}})
        again = pool.run(ref, case.to_json(), {**plain_options(run_options), **extra}, timeout)
        if again.failed:
            needed.append(name)
    found = [n for n in needed if n in DETECTORS]
    if found:
        return Confirmation(line="; ".join(DETECTORS[n] for n in found))
    what = f"{outcome.verdict} ({outcome.message.splitlines()[0][:160]})"
    if not needed:
        return Confirmation(limit=f"the {what} appears only under fuzzkern's instrumentation as "
                            "a whole: the case passes as a plain call (every check off) and "
                            "with each check on alone")
    words = " and ".join(CHECK_WORDS.get(n, n) for n in needed)
    off = " ".join(f"--no-check {n}" for n in needed)
    flags = ", ".join(f"{n!r}: False" for n in needed)
    return Confirmation(limit=f"the {what} needs {words}: the case passes as a plain call; "
                        f"turn it off with {off} or Target(checks={{{flags}}})")


__all__ = ["Confirmation", "confirm", "plain_options"]
