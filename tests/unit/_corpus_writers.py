"""Child-process bodies for the corpus concurrency tests (importable by worker processes)."""

import os
import random
import signal

from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.corpus import store as corpus
from fuzzkern.judge.outcome import Outcome

TARGET_ID = "tests.corpus.writers"
REF = "tests/unit/targets/corpus_targets.py::strided"


def case_for(seed, n=4096):
    """A case of one strided float32 tensor; the seed picks the values (and the entry id)."""
    layout = Layout((0,), (2,), (1,), 3, ())
    x = TensorCase.build((n,), "float32", layout, Values(seed, "normal", ((0, "nan"),)))
    return Case({"N": n}, {"x": x})


def outcome():
    return Outcome("kernel-bug", "interpret disagrees with the reference")


def write_many(corpus_dir, seeds, order_seed, repeat=2):
    """Write the entries of ``seeds`` ``repeat`` times each, in a shuffled order."""
    todo = [s for s in seeds for _ in range(repeat)]
    random.Random(order_seed).shuffle(todo)
    for s in todo:
        corpus.save(corpus_dir, TARGET_ID, REF, case_for(s), outcome(), modes=("interpret",))


def write_until_killed(corpus_dir, first_seed, log_path, kill_at_fsync=None, n=200_000):
    """Write entries of seeds first_seed, first_seed+1, ... forever, logging each id once its
    save() returned. With ``kill_at_fsync=k``, SIGKILL this process inside the k-th fsync
    (a deterministic death at a chosen point of a write)."""
    if kill_at_fsync is not None:
        real_fsync = os.fsync
        calls = [0]

        def fsync(fd):
            calls[0] += 1
            if calls[0] == kill_at_fsync:
                os.kill(os.getpid(), signal.SIGKILL)
            real_fsync(fd)

        os.fsync = fsync
    seed = first_seed
    with open(log_path, "a") as log:
        while True:
            case = case_for(seed, n)
            path = corpus.save(corpus_dir, TARGET_ID, REF, case, outcome(), modes=("interpret",))
            log.write(os.path.basename(path) + "\n")
            log.flush()  # the log outlives a SIGKILL: the kernel holds its pages
            seed += 1
