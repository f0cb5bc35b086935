"""Small targets for the adversarial suite: plain torch launchers (one Triton kernel, run by
the interpreter), so each case takes milliseconds and a run's timing is controlled by the
launchers themselves."""

import os
import signal
import subprocess
import sys
import time

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


def _wrong_above_3(x):
    y = x * 1
    if x.shape[0] > 3:
        y[0] = 7.0
    return y


def _slow_wrong(x):
    # every failing case takes a while: shrinking is slow, so a signal can land in it
    y = x * 1
    if x.shape[0] > 3:
        mark = os.environ.get("FUZZKERN_TEST_MARK")
        if mark:  # one byte per failing case: the test sees when shrinking is under way
            with open(mark, "a") as fh:
                fh.write("x")
        time.sleep(float(os.environ.get("FUZZKERN_TEST_SLOW", "0.3")))
        y[0] = 7.0
    return y


def _spin(x, MODE):
    if MODE == 1:
        mark = os.environ.get("FUZZKERN_TEST_MARK")
        if mark:
            open(mark, "a").close()
        while True:  # a kernel that never returns
            pass
    return x * 1


def _chatty(x):
    # a kernel that prints a lot, at the Python and the C level
    print("KERNEL-STDOUT " + "x" * 200_000)
    print("KERNEL-STDERR", file=sys.stderr)
    y = x * 1
    if x.shape[0] > 2:
        y[0] = 7.0
    return y


_X = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]))
_DIMS = {"N": fks.sizes(max_value=64)}

wrong = fuzzkern.Target(launcher=_wrong_above_3, reference=lambda x: x, inputs=_X, dims=_DIMS)

slow_wrong = fuzzkern.Target(launcher=_slow_wrong, reference=lambda x: x, inputs=_X, dims=_DIMS)

spins = fuzzkern.Target(
    launcher=_spin, reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), MODE=st.just(1)),
    dims={"N": fks.sizes(max_value=8)}, timeout=120.0,
)

chatty = fuzzkern.Target(launcher=_chatty, reference=lambda x: x, inputs=_X, dims=_DIMS)


# -- corpus attacks (test_corpus_attacks.py) ---------------------------------------------------


@triton.jit
def _copy_one_past_the_end(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, v, mask=offs <= n)  # the bug: <= writes y[n]


def _oob_above_3(x):
    y = torch.empty_like(x)
    n = x.shape[0]
    if n > 3:
        _copy_one_past_the_end[(1,)](x, y, n, BLOCK=triton.next_power_of_2(n + 1))
    else:
        y.copy_(x)
    return y


# a Triton kernel that writes one element past its output (only the interpreter's bounds check
# sees it: the values are right)
oob = fuzzkern.Target(launcher=_oob_above_3, reference=lambda x: x, inputs=_X,
                      dims={"N": fks.sizes(max_value=16)})

# the fixed twin of `wrong` (for replay --ref)
fixed = fuzzkern.Target(launcher=lambda x: x * 1, reference=lambda x: x, inputs=_X, dims=_DIMS)

_SLEEPER = "import time; time.sleep(300)  # "


def _daemons(x):
    # host code that leaves processes behind: a new session, and a double fork with setsid
    tag = os.environ["FUZZKERN_TEST_TAG"]
    subprocess.Popen([sys.executable, "-c", _SLEEPER + tag], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", _SLEEPER + tag])
        os._exit(0)
    os.waitpid(pid, 0)
    return x * 1


daemons = fuzzkern.Target(launcher=_daemons, reference=lambda x: x, inputs=_X, dims=_DIMS)

# every case is empty: nothing is ever compared
empty = fuzzkern.Target(launcher=lambda x: x * 1, reference=lambda x: x, inputs=_X,
                        dims={"N": fks.sizes(min_value=0, max_value=0)})


def _exits(x):
    if x.shape[0] > 3:
        sys.exit(0)  # a launcher that ends its process "successfully"
    return x * 1


def _kills_parent(x):
    if x.shape[0] > 3:
        os.kill(os.getppid(), signal.SIGKILL)  # the worker's parent: the fork server
        time.sleep(5)
    return x * 1


def _chdirs(x):
    os.chdir("/")  # every case moves the worker elsewhere
    y = x * 1
    if x.shape[0] > 3:
        y[0] = 7.0
    return y


def _monkeypatches(x):
    # a launcher that tries to make every comparison pass
    import numpy

    torch.allclose = lambda *a, **k: True
    torch.equal = lambda *a, **k: True
    torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
    numpy.allclose = lambda *a, **k: True
    y = x * 1
    if x.shape[0] > 3:
        y[0] = 7.0
    return y


def _floods(x):
    y = x * 1
    if x.shape[0] > 3:
        mark = os.environ["FUZZKERN_TEST_MARK"]
        if not os.path.exists(mark):  # once: 550 MB on stdout
            open(mark, "w").close()
            chunk = "x" * (1 << 20)
            for _ in range(550):
                sys.stdout.write(chunk)
        y[0] = 7.0
    return y


def _ignores_signals(x):
    if x.shape[0] > 3:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            pass
    return x * 1


exits = fuzzkern.Target(launcher=_exits, reference=lambda x: x, inputs=_X, dims=_DIMS)
kills_parent = fuzzkern.Target(launcher=_kills_parent, reference=lambda x: x, inputs=_X,
                               dims=_DIMS)
chdirs = fuzzkern.Target(launcher=_chdirs, reference=lambda x: x, inputs=_X, dims=_DIMS)
monkeypatches = fuzzkern.Target(launcher=_monkeypatches, reference=lambda x: x, inputs=_X,
                                dims=_DIMS)
floods = fuzzkern.Target(launcher=_floods, reference=lambda x: x, inputs=_X, dims=_DIMS)
ignores_signals = fuzzkern.Target(launcher=_ignores_signals, reference=lambda x: x, inputs=_X,
                                  dims={"N": fks.sizes(max_value=8)}, timeout=2.0)


def _tells_its_pid(x):
    # every case: append this worker's pid, so a test can kill the worker from outside
    with open(os.environ["FUZZKERN_TEST_MARK"], "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(0.02)
    return x * 1


tells_its_pid = fuzzkern.Target(launcher=_tells_its_pid, reference=lambda x: x, inputs=_X,
                                dims=_DIMS)


def _raises_40mb(x):
    if x.shape[0] > 3:
        raise ValueError("BAD-INDEX " + "y" * (40 << 20) + " END")
    return x * 1


raises_40mb = fuzzkern.Target(launcher=_raises_40mb, reference=lambda x: x, inputs=_X,
                              dims=_DIMS)


def _clears_pdeathsig(x):
    # a case that turns off its worker's parent-death signal, then spins: only a watchdog
    # outside the worker ends it when fuzzkern is SIGKILLed
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 0)  # PR_SET_PDEATHSIG, 0
    with open(os.environ["FUZZKERN_TEST_MARK"], "w") as fh:
        fh.write(str(os.getpid()))
    while True:
        pass


clears_pdeathsig = fuzzkern.Target(launcher=_clears_pdeathsig, reference=lambda x: x,
                                   inputs=_X, dims={"N": fks.sizes(max_value=8)}, timeout=300.0)


def _nest(v, n=3000):
    for _ in range(n):
        v = [v]
    return v


def _deep_wrong(x):
    y = x * 1
    if x.shape[0] > 3:
        y[0] = 7.0
    return _nest(y)


# a launcher and reference returning a list nested 3000 deep (past every recursion limit)
deep_outputs = fuzzkern.Target(launcher=_deep_wrong, reference=lambda x: _nest(x), inputs=_X,
                               dims=_DIMS)


def _replaces_compare(x):
    # a launcher that makes every comparison in its worker pass
    import fuzzkern.judge.oracle as oracle
    from fuzzkern.judge.outcome import Comparison

    oracle.compare = lambda *a, **k: Comparison(ok=True)
    y = x * 1
    if x.shape[0] > 3:
        y[0] = 7.0
    return y


replaces_compare = fuzzkern.Target(launcher=_replaces_compare, reference=lambda x: x,
                                   inputs=_X, dims=_DIMS)


# -- launchers that tamper with the judge in their worker, each in its own way (issue 42): the
# worker's own comparison passes the wrong output, the parent's (fuzzkern.judge.recheck)
# does not. None replaces an attribute of fuzzkern's judge modules (which the worker notices
# itself), except the first.

_wrong = _wrong_above_3


def _patches_numpy_abs(x):
    import numpy

    numpy.abs = lambda a, *args, **kw: numpy.zeros_like(a)  # every difference is 0
    return _wrong(x)


def _patches_tensor_numpy(x):
    import numpy

    original = torch.Tensor.numpy
    # every tensor reads as zeros: the output and the reference alike
    torch.Tensor.numpy = lambda self, *a, **k: numpy.zeros_like(original(self, *a, **k))
    return _wrong(x)


_STASH = []


def _stashes(x):
    y = _wrong(x)
    _STASH[:] = [y]
    return y


def _fixes_the_outputs(x):
    # the reference runs after the launch: it repairs the launcher's output in place
    for y in _STASH:
        if y.shape == x.shape:
            y.copy_(x)
    _STASH.clear()
    return x


def _patches_run_judge(x):
    from fuzzkern.execution import runner
    from fuzzkern.judge.outcome import Comparison, ModeResult

    def judge(self, mode, expected, outputs, detail, seconds, *rest):
        return ModeResult(mode, "ok", Comparison(ok=True), detail=detail, seconds=seconds)

    runner._Run._judge = judge  # a method of a class: the module's attribute stays
    return _wrong(x)


def _patches_outcome_json(x):
    from fuzzkern.judge.outcome import Outcome

    original = Outcome.to_json

    def to_json(self):
        d = original(self)
        d["verdict"] = "pass"
        d["message"] = ""
        for m in d["modes"].values():
            m["status"] = "ok"
            m["comparison"] = None
        return d

    Outcome.to_json = to_json  # what the worker sends says pass
    return _wrong(x)


patches_numpy_abs = fuzzkern.Target(launcher=_patches_numpy_abs, reference=lambda x: x,
                                    inputs=_X, dims=_DIMS)
patches_tensor_numpy = fuzzkern.Target(launcher=_patches_tensor_numpy, reference=lambda x: x,
                                       inputs=_X, dims=_DIMS)
fixes_the_outputs = fuzzkern.Target(launcher=_stashes, reference=_fixes_the_outputs,
                                    inputs=_X, dims=_DIMS)
patches_run_judge = fuzzkern.Target(launcher=_patches_run_judge, reference=lambda x: x,
                                    inputs=_X, dims=_DIMS)
patches_outcome_json = fuzzkern.Target(launcher=_patches_outcome_json, reference=lambda x: x,
                                       inputs=_X, dims=_DIMS)


class _RunsInTheParent:
    """Unpickled, it would write the file named by FUZZKERN_TEST_MARK (in the parent)."""

    def __reduce__(self):
        return (subprocess.call, (["touch", os.environ.get("FUZZKERN_TEST_MARK", "/dev/null")],))


def _sends_code(x):
    # a launcher that writes a pickle naming a function onto its worker's pipe
    from fuzzkern.execution import progress

    progress._channel(("progress", _RunsInTheParent()))
    return x * 1


sends_code = fuzzkern.Target(launcher=_sends_code, reference=lambda x: x, inputs=_X, dims=_DIMS)


def _loosens_tolerance(x):
    from fuzzkern import Tolerance
    from fuzzkern.execution import runner

    # a method of a class, the tolerance the worker's comparison and its claim are told
    runner._Run._tolerance = lambda self, outputs, compiled: Tolerance(rtol=1e9, atol=1e9)
    return _wrong(x)


loosens_tolerance = fuzzkern.Target(launcher=_loosens_tolerance, reference=lambda x: x,
                                    inputs=_X, dims=_DIMS)


class _Unprintable(Exception):
    """An exception (or value) whose ``str`` and ``repr`` recurse without end."""

    def __str__(self):
        return str(self)

    __repr__ = __str__


def _raises_unprintable(x):
    if x.shape[0] > 3:
        raise _Unprintable()
    return x * 1


# a launcher raising an exception whose __str__ recurses: still the kernel's error
raises_unprintable = fuzzkern.Target(launcher=_raises_unprintable, reference=lambda x: x,
                                     inputs=_X, dims=_DIMS)
# a launcher returning a value whose repr recurses: a usage error, said in one line
returns_unprintable = fuzzkern.Target(launcher=lambda x: _Unprintable(), reference=lambda x: x,
                                      inputs=_X, dims=_DIMS)


def _returns_itself(x):
    out = [x * 1]
    out.append(out)
    return out


# a launcher returning a list that holds itself (flattening it never ended: the case ran until
# the budget, "no case ran")
returns_itself = fuzzkern.Target(launcher=_returns_itself, reference=lambda x: [x, [x]],
                                 inputs=_X, dims=_DIMS)


def _lowers_recursion_limit(x):
    sys.setrecursionlimit(80)  # the worker's own code runs under it after the launch
    return _wrong(x)


# host code lowering the recursion limit: once fuzzkern's own judging failed under it, a
# fuzzkern-limit with status ok (the wrong value missed)
lowers_recursion_limit = fuzzkern.Target(launcher=_lowers_recursion_limit,
                                         reference=lambda x: x, inputs=_X, dims=_DIMS)


def _lowers_open_files(x):
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8))  # fuzzkern's judge then cannot import
    return _wrong(x)


# host code lowering the open-file limit of its worker: once a fuzzkern-limit, status ok
# (the wrong value missed); the hard limit stays lowered unless the worker is replaced
lowers_open_files = fuzzkern.Target(launcher=_lowers_open_files, reference=lambda x: x,
                                    inputs=_X, dims=_DIMS)


def _kills_its_group(x):
    if x.shape[0] > 3:
        os.killpg(0, signal.SIGKILL)  # a library's clean-up of "my process group"
    return x * 1


# host code SIGKILLing its own process group: once fuzzkern's too (exit 137, nothing saved)
kills_its_group = fuzzkern.Target(launcher=_kills_its_group, reference=lambda x: x, inputs=_X,
                                  dims=_DIMS)


def _exits_leaving_a_child(x):
    # the worker ends while a child of its case (a new session) holds the worker's pipe open:
    # no end of file comes to the parent
    if x.shape[0] > 3:
        if os.fork() == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)  # not the test's output pipes: only this
            for fd in (0, 1, 2):  # worker's own pipe is held
                os.dup2(null, fd)
            with open(os.environ["FUZZKERN_TEST_MARK"], "a") as fh:
                fh.write(f"{os.getpid()}\n")
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    return x * 1


exits_leaving_a_child = fuzzkern.Target(launcher=_exits_leaving_a_child, reference=lambda x: x,
                                        inputs=_X, dims=_DIMS)


def _dies_leaving_a_child(x):
    # the worker dies on its own (a segfault, an abort, the OOM killer) while a child of its
    # case, in the worker's process group, holds fuzzkern's stdout and sleeps
    if x.shape[0] > 3:
        if os.fork() == 0:
            with open(os.environ["FUZZKERN_TEST_MARK"], "a") as fh:
                fh.write(f"{os.getpid()}\n")
            time.sleep(300)
            os._exit(0)
        time.sleep(0.2)  # (the child has written its mark)
        os.kill(os.getpid(), signal.SIGKILL)
    return x * 1


dies_leaving_a_child = fuzzkern.Target(launcher=_dies_leaving_a_child, reference=lambda x: x,
                                       inputs=_X, dims=_DIMS)


def _raises_escapes(x):
    if x.shape[0] > 3:  # a new terminal title, a cleared screen, red text
        raise ValueError("BAD\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED")
    return x * 1


raises_escapes = fuzzkern.Target(launcher=_raises_escapes, reference=lambda x: x, inputs=_X,
                                 dims=_DIMS)


# `wrong` with a scalar input (a corpus entry may hold a 10 MB string there)
wrong_tagged = fuzzkern.Target(
    launcher=lambda x, tag: _wrong_above_3(x), reference=lambda x, tag: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), tag=st.just("t")),
    dims=_DIMS)


class _NoTorchFunctions(torch.Tensor):
    """A tensor subclass whose every torch function raises."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("no torch function for this tensor")


# a launcher returning such a tensor: every case once escaped the worker's judging in the
# case's own code, a fuzzkern-limit (status ok, exit 0, the bug missed)
returns_hostile_subclass = fuzzkern.Target(
    launcher=lambda x: _wrong_above_3(x).as_subclass(_NoTorchFunctions),
    reference=lambda x: x, inputs=_X, dims=_DIMS)
