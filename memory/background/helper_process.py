"""The helper process: CPU work of the background that would otherwise hold the proxy's GIL
runs beside the proxy in child processes, leaving the proxy's own process to the
requests, SQLite and the event loop. Two kinds of work go there: rule distillation
(memory/distill/rules/: about half the CPU an ingest costs) and the embedding worker's
batches (memory/embedders/offloaded.py). Arguments are pickled in, results pickled out.

Each HelperProcess is one child, shared by everything in the proxy process (every Memory a
test opens): HELPER_PROCESS runs the rules, and the embedding batches have one of their
own (memory/embedders/offloaded.py), so that each kind of work waits only for its own.
A child is made on first use or by `prepare()`: a fresh interpreter (`serve_parent`) that
imports only what its calls need, nothing of the proxy or of whatever script runs it, and
inherits none of its threads, sockets or file locks (data_dir's owner lock stays the
parent's alone). Calls go one at a time over a pair of pipes, from one thread of the parent
that waits without holding the GIL.

Each user gets its part of the child ready ahead of its first call (`prepare`). A child
left without calls for IDLE_SECONDS is ended (the next call starts another, in a second or
two): it holds the rules' pipeline and the embedder, ~80 MiB of private memory, and an
idle proxy needs neither; one grown past MEMORY_LIMIT_MIB is replaced after its call. The
child ignores the terminal's and the service manager's stop
signals (a shutdown distils what is pending before its process exits) and exits when its
pipe closes: when its parent exits or dies, kill -9 included. A child that dies (killed,
out of memory, a crash in native code) is replaced: the call it held is tried once more in
a new one, and a call that kills that one too raises HelperProcessDied, a failure like any
other of that work (the write path retries the session with backoff, then dead-letters it;
the embedding worker retries).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_R = TypeVar("_R")
# A child that died on a call gets one replacement for it: a call that kills two in a row
# is the cause, not a bystander.
ATTEMPTS = 2
STOP_SECONDS = 10.0
# A child with no call for this long is ended; the next call starts another.
IDLE_SECONDS = 120.0
# A child whose own memory (anonymous resident pages) passes this is replaced after its
# call. It grows with every new word form it meets: spaCy's vocabulary keeps one entry per
# form, with no bound, so a child kept busy for weeks would only grow; a new one costs a
# second or two of CPU.
MEMORY_LIMIT_MIB = 300.0
# How often, at most, the child's size is looked at after a call: a bulk import makes
# hundreds of calls a second, and reading /proc for each was a few percent of its CPU.
MEMORY_CHECK_SECONDS = 1.0
_CHILD_MAIN = f"from {__name__} import serve_parent; serve_parent()"


class HelperProcessDied(RuntimeError):
    """The helper process died while it held a call, twice in a row."""


class _Child:
    """One running child and the parent's ends of its pipes."""

    def __init__(self) -> None:
        to_child_read, to_child_write = os.pipe()
        from_child_read, from_child_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD_MAIN, str(to_child_read), str(from_child_write)],
                pass_fds=(to_child_read, from_child_write),
                stdin=subprocess.DEVNULL,
            )
        finally:
            os.close(to_child_read)
            os.close(from_child_write)
        self._requests = Connection(to_child_write, readable=False)
        self._replies = Connection(from_child_read, writable=False)

    def call(self, function: Callable[..., Any], args: Sequence[object]) -> Any:
        """The function's result, or the exception it raised, raised here. EOFError or
        OSError when the child is gone."""
        self._requests.send((function, tuple(args)))
        ok, value = self._replies.recv()
        if not ok:
            raise value
        return value

    def close(self, seconds: float) -> None:
        """Close its pipe (the child exits once its call is done) and reap it."""
        self._requests.close()
        self._replies.close()
        try:
            self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class HelperProcess:
    """Runs functions in the child process, starting (or replacing) it as needed. `run`
    is awaited from an event loop; the child is touched by one thread only."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="helper-process")
        self._child: _Child | None = None
        self._last_call = 0.0
        self._last_memory_check = 0.0
        self._idle_check: threading.Timer | None = None

    @property
    def pid(self) -> int | None:
        """The running child's process id (None before the first call)."""
        child = self._child
        return child.process.pid if child is not None else None

    def prepare(self, function: Callable[..., object], *args: object) -> None:
        """Call `function(*args)` in the child in the background, starting the child if
        need be: a warm-up (a model loaded, a pipeline built), so that the first call
        that matters does not wait for it. A failure is logged; that call tries again."""
        self._thread.submit(self._call, function, args).add_done_callback(_log_failure)

    async def run(self, function: Callable[..., _R], *args: object) -> _R:
        loop = asyncio.get_running_loop()
        result: _R = await loop.run_in_executor(self._thread, self._call, function, args)
        return result

    def stop(self) -> None:
        """End the child after the calls already asked of it (the next call starts
        another)."""
        self._thread.submit(self._close).result()

    def _call(self, function: Callable[..., _R], args: Sequence[object]) -> _R:
        try:
            return self._call_child(function, args)
        finally:
            self._last_call = time.monotonic()
            self._replace_if_grown()
            self._check_idleness_in(IDLE_SECONDS)

    def _replace_if_grown(self) -> None:
        child = self._child
        now = time.monotonic()
        if child is None or now - self._last_memory_check < MEMORY_CHECK_SECONDS:
            return
        self._last_memory_check = now
        size = _anonymous_mib(child.process.pid)
        if size is not None and size > MEMORY_LIMIT_MIB:
            log.info("the helper process holds %.0f MiB (limit %.0f): replacing it",
                     size, MEMORY_LIMIT_MIB)
            self._close()

    def _call_child(self, function: Callable[..., _R], args: Sequence[object]) -> _R:
        for attempt in range(1, ATTEMPTS + 1):
            if self._child is None:
                self._child = _Child()
            try:
                result: _R = self._child.call(function, args)
                return result
            except (EOFError, OSError) as exc:
                code = self._child.process.poll()
                self._close()
                if attempt == ATTEMPTS:
                    raise HelperProcessDied(
                        f"the helper process died twice on one call ({exc!r}, "
                        f"exit status {code})"
                    ) from exc
                log.warning("the helper process died (exit status %s); "
                            "starting another", code)
        raise AssertionError("unreachable")

    def _close(self) -> None:
        if self._idle_check is not None:
            self._idle_check.cancel()
            self._idle_check = None
        child, self._child = self._child, None
        if child is not None:
            child.close(STOP_SECONDS)

    def _check_idleness_in(self, seconds: float) -> None:
        """Look again in `seconds` whether the child has been idle long enough to end (on
        the calls' thread, like everything that touches the child); one look pending at
        a time."""
        if self._idle_check is None and self._child is not None:
            self._idle_check = threading.Timer(seconds, self._submit_idleness_check)
            self._idle_check.daemon = True
            self._idle_check.start()

    def _submit_idleness_check(self) -> None:
        # RuntimeError: the interpreter is exiting, and the child goes with its pipe.
        with contextlib.suppress(RuntimeError):
            self._thread.submit(self._end_if_idle)

    def _end_if_idle(self) -> None:
        self._idle_check = None
        idle = time.monotonic() - self._last_call
        if idle >= IDLE_SECONDS:
            if self._child is not None:
                log.info("the helper process was idle for %.0f s: ending it", idle)
            self._close()
        else:
            self._check_idleness_in(IDLE_SECONDS - idle)


def _anonymous_mib(pid: int) -> float | None:
    """A process's anonymous resident memory (its own heap, not mapped files), in MiB;
    None where /proc does not say (not Linux, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024  # the kernel reports kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _log_failure(future: Future[object]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("getting the helper process ready failed: %r", future.exception())


def serve_parent() -> None:
    """The child's main: one call at a time until the parent closes the pipe."""
    requests = Connection(int(sys.argv[1]), writable=False)
    replies = Connection(int(sys.argv[2]), readable=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        try:
            function, args = requests.recv()
        except EOFError:
            return
        try:
            reply: tuple[bool, object] = (True, function(*args))
        except Exception as exc:
            reply = (False, exc)
        try:
            replies.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError):
            replies.send((False, RuntimeError(repr(reply[1]))))


HELPER_PROCESS = HelperProcess()
