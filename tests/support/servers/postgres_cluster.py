"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary folder, a free
loopback port, stopped (and the folder removed) at the end.

Debian's `postgresql` package provides the server (`make postgres` installs it when
missing). The server refuses to run as root, so under root the cluster belongs to the
`postgres` user the package creates. Durability is switched off: the cluster lives for
one test run.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.support.servers.ports import free_port

SUPERUSER = "mnemo"
START_SECONDS = 30.0


def server_binaries() -> Path | None:
    """The folder holding initdb and postgres (the newest installed version), if any."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(os.path.realpath(on_path)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return Path(versions[-1]) if versions else None


@dataclass
class Cluster:
    port: int
    folder: Path
    process: subprocess.Popen[bytes]
    command: list[str]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        name = "t" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        self._halt()
        shutil.rmtree(self.folder, ignore_errors=True)

    def restart(self) -> None:
        """Stop the server (its clients' connections drop) and start it again, as a
        restart or a failover does."""
        self._halt()
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_until_up()

    def _halt(self) -> None:
        """A fast shutdown (SIGINT: clients are disconnected), sent to the server itself:
        under root the process started is `runuser`, which does not pass SIGINT on, and
        killing it would leave the server running without its folder."""
        server = self._server_pid()
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.kill(server if server is not None else self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            if server is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(server, signal.SIGKILL)
            self.process.kill()
            self.process.wait()

    def _server_pid(self) -> int | None:
        """The postmaster's pid, from the first line of its postmaster.pid."""
        try:
            return int((self.folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the throwaway PostgreSQL cluster did not start") from None
                time.sleep(0.1)


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix and owner for running the server (not root)."""
    if os.geteuid() != 0:
        return [], None, None
    owner = pwd.getpwnam("postgres")
    return ["runuser", "-u", "postgres", "--"], owner.pw_uid, owner.pw_gid


def start_cluster() -> Cluster:
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed: run `make postgres` (apt-get)")
    prefix, uid, gid = _as_server_user()
    folder = Path(tempfile.mkdtemp(prefix="mnemo-pg-"))
    if uid is not None and gid is not None:
        os.chown(folder, uid, gid)
    data = folder / "data"
    subprocess.run(
        [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust",
         "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
        check=True, capture_output=True,
    )
    port = free_port()
    command = [*prefix, str(binaries / "postgres"), "-D", str(data), "-p", str(port),
               "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={folder}",
               "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
               "-c", "max_connections=300"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cluster = Cluster(port, folder, process, command)
    try:
        cluster._wait_until_up()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def running_cluster() -> Iterator[Cluster]:
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()
