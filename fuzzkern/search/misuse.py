"""Usage errors a case's outcome shows (docs/verdicts.md): a launcher that breaks its contract
(returns None without declaring in-place inputs, returns something that is not a tensor, or
another number of outputs than the reference) fails the same way on every case. The search
stops the target at the first such case and reports a usage error, instead of fuzzing,
shrinking and saving it as a kernel bug."""

from __future__ import annotations

import re

from fuzzkern.judge.outcome import Outcome

#: the oracle's structural findings that are the launcher's contract, not the kernel's values
_NOTHING = re.compile(r"the launcher returned nothing but the reference returned (\d+)")
_NOT_A_TENSOR = re.compile(r"(?:the output|output (\d+)) is (.+?), not a tensor")
_COUNT = re.compile(r"the kernel returned (\d+) output\(s\) but the reference returned (\d+)")


def launcher_misuse(outcome: Outcome) -> str | None:
    """The usage error ``outcome`` shows, in words with the fix, or None."""
    for m in outcome.modes.values():
        text = m.comparison.structural if m.comparison is not None else None
        if not text:
            continue
        if _NOTHING.search(text):
            return ("the launcher returned None: return the output tensor(s), or declare the "
                    "inputs it writes with Target(inplace=...)")
        found = _NOT_A_TENSOR.search(text)
        if found:
            which = f"output {found.group(1)}" if found.group(1) else "its output"
            return (f"the launcher returned {found.group(2)}, not a tensor ({which}): return "
                    "the output tensor(s)")
        found = _COUNT.search(text)
        if found:
            return (f"the launcher returned {found.group(1)} outputs, the reference "
                    f"{found.group(2)}: both must return the same outputs, in order")
    return None
