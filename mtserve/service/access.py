"""API keys and rate limits.

Keys are random 32-byte tokens shown once, at creation. Only their SHA-256 is
stored (a key has 256 bits of entropy, so a slow hash adds nothing), and the
lookup compares hashes with ``hmac.compare_digest``. A key is never logged:
log lines carry its public id.

Limits are per minute, counted in a sliding window, per key, and per client IP
for anonymous use. Everything is in one process, like the engine: a service
spread over several processes would move the counters to a shared store.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import sqlite3
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

KEY_PREFIX = "mts_"


class AccessDenied(PermissionError):
    """The key is missing or wrong (403)."""


class RateLimited(RuntimeError):
    """Over the per-minute limit (429); ``retry_after_s`` says when to come back."""

    def __init__(self, message: str, retry_after_s: int):
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ApiKey:
    id: str  # public, safe to log
    name: str
    rpm: int  # requests per minute; 0 = unlimited
    created: float


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class KeyStore:
    """SQLite table of hashed keys under $MTSERVE_HOME."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS api_keys ("
                " id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE,"
                " rpm INTEGER NOT NULL, created REAL NOT NULL)"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=5)

    def add(self, name: str = "", rpm: int = 0) -> tuple[str, ApiKey]:
        """Create a key; returns (the secret, shown once, and its record)."""
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(id=secrets.token_hex(4), name=name, rpm=max(0, rpm), created=time.time())
        with self._lock, self._connect() as db:
            db.execute(
                "INSERT INTO api_keys (id, name, key_hash, rpm, created) VALUES (?, ?, ?, ?, ?)",
                (record.id, record.name, _hash(secret), record.rpm, record.created),
            )
        return secret, record

    def list(self) -> list[ApiKey]:
        with self._connect() as db:
            rows = db.execute("SELECT id, name, rpm, created FROM api_keys ORDER BY created").fetchall()
        return [ApiKey(*row) for row in rows]

    def remove(self, key_id: str) -> bool:
        with self._lock, self._connect() as db:
            return db.execute("DELETE FROM api_keys WHERE id = ?", (key_id,)).rowcount > 0

    def lookup(self, secret: str) -> ApiKey | None:
        wanted = _hash(secret)
        with self._connect() as db:
            rows = db.execute("SELECT id, name, rpm, created, key_hash FROM api_keys").fetchall()
        found = None
        for key_id, name, rpm, created, key_hash in rows:  # compare all, in constant time each
            if hmac.compare_digest(key_hash, wanted):
                found = ApiKey(key_id, name, rpm, created)
        return found


class RateLimiter:
    """Sliding one-minute windows, one per caller."""

    WINDOW_S = 60.0

    def __init__(self, max_callers: int = 100_000):
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._max_callers = max_callers

    def hit(self, caller: str, limit: int, now: float | None = None) -> None:
        if limit <= 0:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            hits = self._hits.setdefault(caller, deque())
            while hits and hits[0] <= now - self.WINDOW_S:
                hits.popleft()
            if len(hits) >= limit:
                retry = max(1, math.ceil(hits[0] + self.WINDOW_S - now))
                raise RateLimited(
                    f"rate limit of {limit} requests per minute reached; retry in {retry} s", retry
                )
            hits.append(now)
            if len(self._hits) > self._max_callers:  # forget idle callers, bounded memory
                for stale in [c for c, h in self._hits.items() if not h or h[-1] <= now - self.WINDOW_S]:
                    del self._hits[stale]


@dataclass(frozen=True)
class Caller:
    """Who made a request, for limits and logs (never the key itself)."""

    key_id: str | None
    ip: str

    @property
    def label(self) -> str:
        return f"key:{self.key_id}" if self.key_id else f"ip:{self.ip}"


class AccessControl:
    """The policy: off by default; on, keys are checked and every caller is rate limited."""

    def __init__(self, store: KeyStore | None, *, require_key: bool, anonymous_rpm: int):
        self.store = store
        self.require_key = require_key
        self.anonymous_rpm = anonymous_rpm
        self.limiter = RateLimiter()

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def check(self, secret: str | None, ip: str) -> Caller:
        """The key rule alone, not counted against a rate limit: for routes that read back work
        (a job's status, a download, the model list), which a client may poll."""
        if self.store is None:
            return Caller(None, ip)
        if secret:
            key = self.store.lookup(secret)
            if key is None:
                raise AccessDenied("invalid API key")
            return Caller(key.id, ip)
        if self.require_key:
            raise AccessDenied(
                "an API key is required: send it as api_key or in an Authorization: Bearer header"
            )
        return Caller(None, ip)

    def admit(self, secret: str | None, ip: str) -> Caller:
        if self.store is None:
            return Caller(None, ip)
        if secret:
            key = self.store.lookup(secret)
            if key is None:
                raise AccessDenied("invalid API key")
            self.limiter.hit(f"key:{key.id}", key.rpm)
            return Caller(key.id, ip)
        if self.require_key:
            raise AccessDenied(
                "an API key is required: send it as api_key or in an Authorization: Bearer header"
            )
        self.limiter.hit(f"ip:{ip}", self.anonymous_rpm)
        return Caller(None, ip)
