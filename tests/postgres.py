"""A real PostgreSQL server for the tests: Debian's ``postgresql`` binaries, a throwaway
cluster on a free loopback port, one fresh database per store under test."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from durable_agui.cli.devserver import free_port
from tests.prerequisites import require_postgres_binaries


def postgres_bin() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` (Debian), else ``initdb`` on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> int:
    return int(Path(path).parent.parent.name.split(".")[0])


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[PostgresServer]:
    """A started ``PostgresServer``, stopped (and removed) afterwards. Without the binaries
    it skips, and fails under CI (``require_postgres_binaries``)."""
    server = PostgresServer(require_postgres_binaries())
    server.start()
    try:
        yield server
    finally:
        server.stop()


class ExternalPostgres:
    """A PostgreSQL server someone else runs (``DURABLE_AGUI_TEST_POSTGRES_URL``, a libpq URL
    of a role that may create databases); each store under test gets a database of its own."""

    def __init__(self, url: str) -> None:
        self.url = url

    def new_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        base = make_url(self.url).set(drivername="postgresql+psycopg", database=name)
        return base.render_as_string(hide_password=False)


class PostgresServer:
    """``initdb`` + ``postgres`` on 127.0.0.1:<free port>, trust auth, fsync off (throwaway).

    PostgreSQL refuses to run as root, so under root it runs as the ``postgres`` user that
    Debian's package creates.
    """

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="durable-agui-pg-"))
        self._user: str | None = "postgres" if os.geteuid() == 0 else None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> None:
        if self._user:
            entry = pwd.getpwnam(self._user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        data = self.folder / "data"
        if data.exists():  # started again after stop(keep_data=True)
            self._serve(data, timeout_s)
            return
        subprocess.run(
            [
                *(str(self.bin_dir / "initdb"), "-D", str(data), "-U", "postgres"),
                *("-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"),
            ],
            check=True,
            capture_output=True,
            user=self._user,
            group=self._user,
        )
        self._serve(data, timeout_s)

    def _serve(self, data: Path, timeout_s: float) -> None:
        log = open(self.folder / "postgres.log", "ab")  # noqa: SIM115 - closed with the process
        self._process = subprocess.Popen(
            [
                *(str(self.bin_dir / "postgres"), "-D", str(data), "-p", str(self.port)),
                *("-k", str(self.folder), "-c", "listen_addresses=127.0.0.1"),
                *("-c", "fsync=off", "-c", "max_connections=300"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            user=self._user,
            group=self._user,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"postgres exited: {self.log()}")
            try:
                with psycopg.connect(self.dsn("postgres"), connect_timeout=1):
                    return
            except psycopg.OperationalError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"postgres did not come up: {self.log()}")

    def log(self) -> str:
        return (self.folder / "postgres.log").read_text(errors="replace")

    def dsn(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database; returns its SQLAlchemy URL (psycopg 3 driver)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def kill(self, timeout_s: float = 30.0) -> None:
        """SIGKILL the postmaster, as in a crash, and wait until its orphaned backends are
        gone (they notice the postmaster's death and exit): until then the shared memory
        segment ``postmaster.pid`` names is still attached and a new postmaster refuses to
        start. ``start`` then serves the same data on the same port, after crash recovery.

        Raises:
            TimeoutError: a backend still holds the segment after ``timeout_s``.
        """
        process, self._process = self._process, None
        assert process is not None, "not running"
        shmid = _shmid(self.folder / "data" / "postmaster.pid")
        process.kill()
        process.wait()
        deadline = time.monotonic() + timeout_s
        while shmid is not None and _attached(shmid):
            if time.monotonic() > deadline:
                raise TimeoutError(f"backends of the killed postmaster live on: {self.log()}")
            time.sleep(0.05)

    def stop(self, keep_data: bool = False) -> None:
        """Fast shutdown (SIGINT), SIGKILL if that takes too long; the folder goes too unless
        ``keep_data`` (then ``start`` serves the same data on the same port again)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(2)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if not keep_data:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.folder)


def _shmid(pid_file: Path) -> int | None:
    """The System V shared memory id in a ``postmaster.pid`` (its 7th line, ``key shmid``)."""
    lines = pid_file.read_text().splitlines()
    fields = lines[6].split() if len(lines) > 6 else []
    return int(fields[1]) if len(fields) == 2 else None


def _attached(shmid: int) -> bool:
    """Whether a process still has System V shared memory segment ``shmid`` attached
    (``/proc/sysvipc/shm``: key, shmid, perms, size, cpid, lpid, nattch, ...)."""
    for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1]) == shmid:
            return int(fields[6]) > 0
    return False
