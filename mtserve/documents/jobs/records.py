"""Document jobs on disk: one SQLite table beside the other stores under ``$MTSERVE_HOME``.

A job's record is written when its upload is accepted (before the 202 goes
out), then after each change: status, progress per chunk, the result or the
error. Writes come from a worker thread and may arrive out of order, so each
carries the job's version and an older one never overwrites a newer one. The
request's glossary (with a named glossary already merged in) and the job's
owner (an API key id) are written once, with the job; the glossary is read
back only to resume it after a restart.

Several processes may share one ``$MTSERVE_HOME`` (Ray Serve replicas on one
node). Each job's record names the process that runs it, and each process
holds an advisory lock (``flock``) on its own file under ``jobs.instances/``
for as long as it lives, released by the kernel when it dies. A starting
process takes over only the unfinished jobs whose process's lock is free, one
starter at a time, so no job is run twice and none is left to a dead process.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    filename TEXT NOT NULL,
    format TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    total INTEGER NOT NULL,
    done INTEGER NOT NULL,
    section TEXT,
    error TEXT,
    error_status INTEGER,
    detected TEXT,
    result_name TEXT,
    result_filename TEXT,
    notes TEXT NOT NULL,
    upload TEXT,
    glossary TEXT,
    created_at REAL NOT NULL,
    finished_at REAL,
    instance TEXT,
    chars INTEGER NOT NULL DEFAULT 0,
    guidance TEXT,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_finish ON jobs (finished_at);
"""
# What changes as a job runs; the rest is written once, with the job.
MUTABLE = ("version", "status", "total", "done", "section", "error", "error_status", "detected", "result_name",
           "result_filename", "notes", "upload", "finished_at")
COLUMNS = ("id", "filename", "format", "source", "target", "glossary", "created_at", "instance", "chars",
           "guidance", "owner", *MUTABLE)
# columns a file made by an older mtserve lacks; guidance: the request's context, instructions and formality;
# owner: the API key that uploaded the job (NULL in an older file: a caller without a key, which is the
# narrowest reading; see mtserve.documents.jobs.store)
ADDED_COLUMNS = {"chars": "INTEGER NOT NULL DEFAULT 0", "guidance": "TEXT", "owner": "TEXT"}
LISTED = tuple(c for c in COLUMNS if c != "glossary")  # a listing leaves each job's glossary on disk


class JobRecords:
    """The jobs table. Every call opens its own connection, so any thread may call."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._ready = False

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10)
            try:
                if not self._ready:
                    db.executescript(_SCHEMA)
                    present = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
                    for column, kind in ADDED_COLUMNS.items():
                        if column not in present:
                            db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
                    self._ready = True
                with db:  # one transaction: committed, or rolled back on an error
                    yield db
            finally:
                db.close()

    def insert(self, row: dict) -> None:
        """A new job, glossary included; ``row`` has every column (``glossary`` a dict or None)."""
        values = {**row, "glossary": json.dumps(row["glossary"], ensure_ascii=False)
                  if row.get("glossary") else None}
        with self._db() as db:
            db.execute(f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                       [_encode(c, values[c]) for c in COLUMNS])

    def update(self, rows: Iterable[dict]) -> None:
        """The mutable columns of each job, unless the record already holds a newer version."""
        sets = ", ".join(f"{c} = ?" for c in MUTABLE)
        with self._db() as db:
            db.executemany(f"UPDATE jobs SET {sets} WHERE id = ? AND version < ?",
                           [[_encode(c, row[c]) for c in MUTABLE] + [row["id"], row["version"]] for row in rows])

    def claim(self, job_ids: Iterable[str], instance: str) -> None:
        """Make ``instance`` the process that runs these jobs (it takes them over from a dead one)."""
        with self._db() as db:
            db.executemany("UPDATE jobs SET instance = ? WHERE id = ?", [(instance, i) for i in job_ids])

    def unfinished_ids(self) -> set[str]:
        with self._db() as db:
            return {row[0] for row in db.execute("SELECT id FROM jobs WHERE finished_at IS NULL")}

    def load(self) -> list[dict]:
        """Every job, oldest first, without its glossary."""
        with self._db() as db:
            rows = db.execute(f"SELECT {', '.join(LISTED)} FROM jobs ORDER BY created_at").fetchall()
        return [{c: _decode(c, v) for c, v in zip(LISTED, row)} for row in rows]

    def glossary(self, job_id: str) -> dict[str, str] | None:
        with self._db() as db:
            row = db.execute("SELECT glossary FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def delete(self, job_ids: Iterable[str]) -> None:
        with self._db() as db:
            db.executemany("DELETE FROM jobs WHERE id = ?", [(i,) for i in job_ids])

    def delete_finished_before(self, cutoff: float) -> None:
        """Records of jobs that finished before ``cutoff`` (a backstop: the store forgets them one by one)."""
        with self._db() as db:
            db.execute("DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?", (cutoff,))

    def count(self) -> int:
        with self._db() as db:
            return db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]


def _encode(column: str, value):
    if column in ("notes", "detected", "guidance") and value is not None:
        return json.dumps(value, ensure_ascii=False)
    return value


def _decode(column: str, value):
    if column in ("notes", "detected", "guidance") and value is not None:
        return json.loads(value)
    return value


class InstanceLocks:
    """Which processes sharing this home are alive: each holds an ``flock`` on its own file while it runs."""

    def __init__(self, folder: Path, instance: str):
        self.folder = Path(folder)
        self.instance = instance
        self._held: int | None = None

    def _path(self, instance: str) -> Path:
        return self.folder / f"{instance}.lock"

    def hold(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path(self.instance), os.O_RDWR | os.O_CREAT, 0o644)
        _lock(fd, blocking=False)
        self._held = fd

    def release(self) -> None:
        """Let go at a clean stop: the file goes, so the next start takes this process's jobs at once."""
        if self._held is not None:
            with contextlib.suppress(OSError):
                self._path(self.instance).unlink()
            os.close(self._held)
            self._held = None

    def alive(self, instance: str | None) -> bool:
        """Whether the process ``instance`` still runs (holds its lock); a dead one's file is removed."""
        if not instance:
            return False
        if instance == self.instance:
            return True
        try:
            fd = os.open(self._path(instance), os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            _lock(fd, blocking=False)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        with contextlib.suppress(OSError):
            self._path(instance).unlink()
        return False

    @contextlib.contextmanager
    def taking_over(self) -> Iterator[None]:
        """One starting process at a time decides whose jobs are orphaned and claims them."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / ".takeover", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(fd, blocking=True)
            yield
        finally:
            os.close(fd)


def _lock(fd: int, blocking: bool) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: no locks, so every process counts as gone (one server per home)
        return
    fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
