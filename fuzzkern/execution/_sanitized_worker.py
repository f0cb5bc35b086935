"""A worker for ``fuzzkern run --sanitize``:
``python -m fuzzkern.execution._sanitized_worker``, started under compute-sanitizer by
:class:`fuzzkern.execution.sanitizer.SanitizedWorker`.

The protocol is the forkserver worker's (:mod:`fuzzkern.execution.pool`) as JSON lines: each line of
stdin is ``[ref, case_json, options]`` (or ``null`` to stop), each reply one line of stdout
holding the outcome's JSON (an object), after any events of the running case (arrays, see
:func:`fuzzkern.execution.progress.notify`). Kernels and launchers may print: the protocol keeps the
original stdout to itself, and file descriptor 1 is pointed at stderr for everything else.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # print() and C-level writes to stdout go to stderr from now on
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except Exception:  # pragma: no cover
        pass
    try:  # die with the parent
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except Exception:  # pragma: no cover
        pass
    import torch

    torch.set_num_threads(1)
    from fuzzkern.execution import progress
    from fuzzkern.execution.pool import (
        become_subreaper,
        end_case_processes,
        run_case_or_harness_error,
    )

    become_subreaper()  # what a case starts ends with the case (fuzzkern.execution.pool)

    def send(event: object) -> None:  # what the case tells the parent while it runs
        protocol.write(json.dumps(event, default=str) + "\n")
        protocol.flush()

    progress._channel = send
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg is None:
            break
        ref, case_json, options = msg
        result = run_case_or_harness_error(ref, case_json, options)
        sent = result.get("transcript")  # its bytes as text, for a JSON line
        if isinstance(sent, dict) and isinstance(sent.get("data"), bytes):
            sent["data"] = base64.b64encode(sent["data"]).decode("ascii")
        killed = end_case_processes()
        if killed:
            result["killed"] = killed
        protocol.write(json.dumps(result, default=str) + "\n")
        protocol.flush()


if __name__ == "__main__":
    main()
