"""Free loopback ports for the servers tests start."""

from __future__ import annotations

import os
import random
import socket

# Under pytest-xdist, below Linux's default range for the kernel's own picks (32768-60999),
# which outgoing connections draw from too.
_SHARED_RANGE = range(20000, 32768)


def free_port() -> int:
    """A loopback port free now. A port is picked before its server binds it, so two test
    processes running side by side (pytest-xdist) could pick the same one in between:
    each xdist worker then takes only ports whose remainder by the number of workers is
    its own number. (Not by asking the kernel for a port and keeping the right ones: its
    picks for bind() are all odd.)"""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers == 1:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # gw0, gw1, ...
    mine = int(worker[2:]) % workers if worker[2:].isdigit() else 0
    while True:
        port = random.randrange(_SHARED_RANGE.start, _SHARED_RANGE.stop)
        port += (mine - port) % workers
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use: another
        return port
