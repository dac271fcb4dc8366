"""A throwaway PostgreSQL cluster for the tests: ``initdb`` + ``pg_ctl`` in a temp folder, one per
test process, removed at exit. PostgreSQL refuses to run as root, so as root the server runs as
Debian's unprivileged ``postgres`` user (``runuser``). Unix socket in the temp folder (user ``kgos``,
trusted) plus a loopback TCP port with a password (for the wrong-password test).
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

PASSWORD = "kgos-test-secret"


@dataclass(frozen=True)
class Cluster:
    folder: Path
    port: int
    bin: Path

    @property
    def socket_dir(self) -> Path:
        return self.folder / "sock"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://kgos@/{dbname}?host={self.socket_dir}&port={self.port}"

    def tcp_url(self, password: str, dbname: str = "postgres") -> str:
        return f"postgresql://kgos:{password}@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        import psycopg
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def pg_ctl(self, *args: str) -> None:
        _run([str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-l", str(self.folder / "log"), *args])

    def stop(self) -> None:
        self.pg_ctl("stop", "-m", "fast", "-w")

    def start(self) -> None:
        self.pg_ctl("start", "-w", "-o", f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -F")


_CLUSTER: Cluster | None = None
_WHY_NOT: str | None = None
_VECTOR: Cluster | None = None
_VECTOR_WHY_NOT: str | None = None


def server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def vector_bin() -> Path | None:
    """A server with the pgvector extension (>= 0.5, for HNSW): the system's when it has it (Debian's
    postgresql-NN-pgvector), else the one the PyPI package ``pgserver`` bundles (PostgreSQL 16 +
    pgvector 0.6; in the dev extra)."""
    system = server_bin()
    if system is not None and glob.glob(str(system.parent / "share" / "extension" / "vector.control")) + glob.glob(
            f"/usr/share/postgresql/{system.parent.name}/extension/vector.control"):
        return system
    try:
        import pgserver  # type: ignore[import-untyped]
    except ImportError:
        return None
    bundled = Path(pgserver.__file__).parent / "pginstall"
    if not (bundled / "bin" / "initdb").exists():
        return None
    if os.geteuid() == 0 and subprocess.run(_as_server_user() + ["test", "-x", str(bundled / "bin" / "initdb")],
                                            check=False).returncode != 0:
        # a package under /root (mode 700) that the server's user cannot reach: a readable copy
        # (~40 MB) of the server and the wheel's libraries, in the same relative places (its RPATH is
        # $ORIGIN/../../../pgserver.libs; PostgreSQL finds lib/ and share/ relative to bin/)
        copy = Path(tempfile.mkdtemp(prefix="kgos-pgvector-"))
        os.chmod(copy, 0o755)
        shutil.copytree(bundled, copy / "pgserver" / "pginstall", symlinks=True)
        libs = bundled.parent.parent / "pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, copy / "pgserver.libs", symlinks=True)
        atexit.register(shutil.rmtree, copy, True)
        bundled = copy / "pgserver" / "pginstall"
    return bundled / "bin"


def vector_cluster() -> tuple[Cluster | None, str | None]:
    """(a cluster whose server has pgvector, None) or (None, why there is none)."""
    global _VECTOR, _VECTOR_WHY_NOT
    if _VECTOR is None and _VECTOR_WHY_NOT is None:
        bindir = vector_bin()
        if bindir is None:
            _VECTOR_WHY_NOT = ("no PostgreSQL with pgvector: apt-get install postgresql-NN-pgvector, or "
                               "pip install pgserver (the dev extra)")
        else:
            try:
                _VECTOR = _start(bindir)
            except (RuntimeError, OSError, KeyError, subprocess.SubprocessError) as exc:
                _VECTOR_WHY_NOT = f"no PostgreSQL with pgvector could be started: {exc}"
    return _VECTOR, _VECTOR_WHY_NOT


def running_vector_cluster() -> Cluster:
    """The pgvector cluster, or the calling test skipped with the reason there is none."""
    c, why = vector_cluster()
    if c is None:
        pytest.skip(why or "no PostgreSQL with pgvector")
    return c


def _as_server_user() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _run(cmd: list[str]) -> None:
    subprocess.run(_as_server_user() + cmd, check=True, capture_output=True, timeout=60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster() -> tuple[Cluster | None, str | None]:
    """(the cluster, None) or (None, why none could be started)."""
    global _CLUSTER, _WHY_NOT
    if _CLUSTER is None and _WHY_NOT is None:
        try:
            _CLUSTER = _start()
        except (RuntimeError, OSError, KeyError, subprocess.SubprocessError) as exc:  # the skip reason, as is
            _WHY_NOT = f"no PostgreSQL server could be started: {exc}"
    return _CLUSTER, _WHY_NOT


def running_cluster() -> Cluster:
    """The cluster, or the calling test skipped with the reason there is none."""
    c, why = cluster()
    if c is None:
        pytest.skip(why or "no PostgreSQL server")
    return c


def _start(bindir: Path | None = None) -> Cluster:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise RuntimeError("psycopg is not installed (pip install -e '.[postgres]')") from None
    bindir = bindir or server_bin()
    if bindir is None:
        raise RuntimeError("no initdb found (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="kgos-pg-"))
    (folder / "sock").mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (folder, folder / "sock"):
            os.chown(path, user.pw_uid, user.pw_gid)
    pwfile = folder / "pw"
    pwfile.write_text(PASSWORD)
    if os.geteuid() == 0:
        os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
    _run([str(bindir / "initdb"), "-D", str(folder / "data"), "-U", "kgos", "--pwfile", str(pwfile),
          "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"])
    c = Cluster(folder, _free_port(), bindir)
    c.start()
    atexit.register(_remove, c)
    return c


def _remove(c: Cluster) -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):  # already stopped
        c.pg_ctl("stop", "-m", "immediate", "-w")
    shutil.rmtree(c.folder, ignore_errors=True)
