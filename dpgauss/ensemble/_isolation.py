"""Each group's fit of SubsampleAggregate in a process of its own
(``isolation="process"``).

**What it is for.** The aggregators are private for any candidates of which
one changes, which holds only if each candidate is a function of its own
group's rows (and public values). A wrapped estimator that keeps state across
fits (a class attribute, a module global, the global numpy ``RandomState``)
lets an earlier group's rows reach a later group's candidate, so one replaced
row can move many candidates. Here group g is fitted in a child process that
starts from the parent's state as it was before the group fits (``fork``) or
from a fresh interpreter (``spawn``, where ``fork`` does not exist), and the
only thing that comes back is the candidate: ``8 p`` bytes of float64 through
a pipe, nothing unpickled. Whatever the fit changes in its process (class
attributes, globals, caches in memory, the global random state) dies with it,
so no group's fit can see another's rows and the parent is left as it was.

**What it is not.** It is a defence against state, not against malicious
code (which runs in the parent anyway: the probe fit, ``clone``). It does not
cover what leaves the process during the fit
(files, sockets, shared memory created before the fit, what the fit prints),
how long a fit takes, or state the parent already holds before the fit: a
class attribute filled by an earlier fit on other data is in every child.

**Same release.** The split, the groups' rows and the estimator's parameters
(its ``random_state`` included) are those of the in-process path, and the
child runs the same function (:func:`~dpgauss.ensemble._group_fits.fit_group`)
on them, so a well-behaved estimator gives the same candidates bit for bit.
A candidate that does not come back whole (the fit raised, the child died,
wrote too much or too little) is a failed candidate, as an exception is in
process. Up to :data:`WIDTH` children run at a time; results are read in
group order, so the order of the candidates never depends on timing.
"""

import collections
import multiprocessing
import os
import pickle
import signal
import sys
import warnings

import numpy as np

__all__ = ["ISOLATIONS", "check_isolation", "isolated_candidates", "start_method"]

#: The accepted values of ``isolation``: None or "none" (in process), "process".
ISOLATIONS = ("none", "process")
#: Children running at once (the parent forks them one at a time and reads
#: them in group order).
WIDTH = 2


def start_method():
    """How a group's process starts: "fork" where the platform has it (the
    child starts from the parent's memory), else "spawn" (a new interpreter)."""
    return "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"


def check_isolation(isolation, estimator, statistic):
    """Validate ``isolation`` (before anything is spent).

    Returns True when the groups run in processes of their own. Raises
    ValueError for an unknown value, or, where processes are spawned, for an
    estimator or statistic that cannot be pickled (a lambda): they are sent
    to each child.
    """
    if isolation is None or isolation == "none":
        return False
    if isolation != "process":
        raise ValueError(
            f"isolation must be None, 'none' or 'process', got {isolation!r}. "
            "Nothing was spent."
        )
    if start_method() == "spawn":
        try:
            pickle.dumps((estimator, statistic))
        except Exception as exc:
            raise ValueError(
                "isolation='process' starts each group in a new interpreter on "
                "this platform, which needs a picklable estimator and statistic "
                f"(a module-level function, not a lambda): {exc!r}. Nothing was "
                "spent."
            ) from exc
    return True


def isolated_candidates(task, group_args, k, p):
    """The (k, p) candidates, group g's row from ``task(*group_args(g))`` run
    in a process of its own (NaN rows: failed groups).

    ``task`` returns a float64 vector (or None for a failed fit); anything
    but exactly p float64 values coming back is a failed candidate.
    """
    fork = start_method() == "fork"
    start, collect = (_fork, _read_fork) if fork else (_spawn, _read_spawn)
    Y = np.full((k, p), np.nan)
    running = collections.deque()
    try:
        for g in range(k):
            if len(running) >= WIDTH:
                _store(Y, *running.popleft(), collect, p)
            others = [child[1] for _, child in running] if fork else []
            try:
                running.append((g, start(task, group_args, g, others)))
            except OSError:
                # No pipe or process to be had (too many processes, no
                # memory): group g fails, as a fit that raises does; an
                # exception here, after the spend, would be a release.
                continue
        while running:
            _store(Y, *running.popleft(), collect, p)
    finally:
        for _, child in running:  # only after an error in the parent
            _stop(child, fork)
    return Y


def _store(Y, g, child, collect, p):
    try:
        data = collect(child, 8 * p)
    except BaseException:
        # As in process, an interrupt while group g runs fails group g only
        # (after the spend, an exception is a release).
        return
    flat = np.frombuffer(data, dtype=np.float64) if len(data) == 8 * p else None
    if flat is not None and np.all(np.isfinite(flat)):
        Y[g] = flat


# -- fork: the child starts from the parent's memory ---------------------------------
def _fork(task, group_args, g, others):
    """Fork group g's child; ``others``: the read ends of the children still
    running, which the child closes (else one group's fit could read, and so
    fail, another's candidate)."""
    for stream in (sys.stdout, sys.stderr):  # else the child repeats their buffers
        _flush(stream)
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns (DeprecationWarning) on fork in a process with
        # threads (BLAS pools): a lock held by another thread at the fork
        # could hang the child. A warning here would raise after the spend
        # under filterwarnings=error; the risk is documented in the guide.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: fit, write the candidate, exit without cleanup
        try:
            # A process group of its own: whatever the fit starts (worker
            # pools) is killed with it once its candidate is read.
            os.setpgid(0, 0)
            for fd in (read, *others):
                os.close(fd)
            flat = task(*group_args(g))
            if flat is not None:
                _write_all(write, np.ascontiguousarray(flat, np.float64).tobytes())
            for stream in (sys.stdout, sys.stderr):
                _flush(stream)
        except BaseException:
            pass
        finally:
            os._exit(0)
    os.close(write)
    try:  # also from the parent, so the group exists whichever runs first
        os.setpgid(pid, pid)
    except OSError:
        pass
    return pid, read


def _read_fork(child, size):
    """At most ``size + 1`` bytes from the child (until it closes the pipe),
    then the child reaped; a child that writes more is killed, and so is one
    whose read was interrupted (else an interrupt would wait for a child that
    hangs, in ``waitpid``, as long as it hangs)."""
    fd = child[1]
    chunks, got, closed = [], 0, False
    try:
        while got <= size:
            chunk = os.read(fd, size + 1 - got)
            if not chunk:
                closed = True
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        _stop(child, fork=True, kill=not closed)
    return b"".join(chunks)


def _stop(child, fork, kill=True):
    if not fork:
        process, conn = child
        conn.close()
        if kill and process.is_alive():
            process.kill()
        process.join()
        return
    pid, fd = child
    try:
        os.close(fd)
    except OSError:
        pass
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:  # the processes the group's fit left behind (before the reap: no reuse)
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _flush(stream):
    try:
        stream.flush()
    except Exception:
        pass


# -- spawn: a new interpreter, sent the group's arguments ----------------------------
def _spawn(task, group_args, g, others):
    ctx = multiprocessing.get_context("spawn")
    read, write = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_spawned, args=(task, group_args(g), write))
    process.start()
    write.close()
    return process, read


def _spawned(task, args, conn):
    flat = None
    try:
        flat = task(*args)
    except BaseException:
        pass
    if flat is not None:
        conn.send_bytes(np.ascontiguousarray(flat, np.float64).tobytes())
    conn.close()


def _read_spawn(child, size):
    conn = child[1]
    try:
        return conn.recv_bytes(size)  # OSError when longer, EOFError when none
    except (EOFError, OSError):
        return b""
    finally:
        _stop(child, fork=False, kill=True)
