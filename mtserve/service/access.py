"""API keys and rate limits.

Keys are random 32-byte tokens shown once, at creation. Only their SHA-256 is
stored (a key has 256 bits of entropy, so a slow hash adds nothing), and the
lookup compares hashes with ``hmac.compare_digest``. A key is never logged:
log lines carry its public id.

Limits are per minute, counted in a sliding window, per key, and per client
network for anonymous use: an IPv4 address (an IPv4-mapped IPv6 address counts
as its IPv4 one), or an IPv6 /64, since one host or one home line is routinely
given a whole /64 and could otherwise rotate addresses to escape its limit.
The table of callers stays bounded: callers idle for a whole window are
forgotten as they age out (the table is ordered by last use, so that costs
nothing per hit), and beyond ``max_callers`` the least recently seen is
dropped. Everything is in one process, like the engine: a service spread over
several processes would move the counters to a shared store.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path

KEY_PREFIX = "mts_"


class AccessDenied(PermissionError):
    """The key is missing or wrong, or the route is not this caller's (403)."""


class InvalidKey(AccessDenied):
    """A key was sent, and it is none of this server's (403; OpenAI's family: 401)."""


class KeyRequired(AccessDenied):
    """No key was sent, and this server requires one (require_api_key): LibreTranslate's family
    answers 400, as LibreTranslate does; OpenAI's 401, DeepL's 403."""


class RateLimited(RuntimeError):
    """Over the per-minute limit (429); ``retry_after_s`` says when to come back, ``limit`` what it is."""

    def __init__(self, message: str, retry_after_s: int, limit: int = 0):
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.limit = limit  # requests per minute


class QuotaExceeded(RuntimeError):
    """A key's character quota for its period is spent (DeepL's 456; a 429 on the other APIs)."""

    def __init__(self, message: str, used: int, limit: int):
        super().__init__(message)
        self.used = used
        self.limit = limit


QUOTA_PERIODS = ("month", "day", "total")


@dataclass(frozen=True)
class ApiKey:
    id: str  # public, safe to log
    name: str
    rpm: int  # requests per minute; 0 = unlimited
    created: float
    char_quota: int = 0  # characters per period; 0 = unlimited
    period: str = "month"  # month (calendar, UTC), day (UTC) or total


def period_label(period: str, now: float | None = None) -> str:
    """The usage bucket a character counts in: 2026-12, 2026-12-01, or all."""
    moment = time.gmtime(time.time() if now is None else now)
    if period == "month":
        return time.strftime("%Y-%m", moment)
    if period == "day":
        return time.strftime("%Y-%m-%d", moment)
    return "all"


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
            columns = {row[1] for row in db.execute("PRAGMA table_info(api_keys)")}
            for column, kind in (("char_quota", "INTEGER NOT NULL DEFAULT 0"),
                                 ("period", "TEXT NOT NULL DEFAULT 'month'")):
                if column not in columns:  # a keys file from before quotas
                    db.execute(f"ALTER TABLE api_keys ADD COLUMN {column} {kind}")
            db.execute("CREATE TABLE IF NOT EXISTS key_usage (key_id TEXT NOT NULL, period TEXT NOT NULL,"
                       " chars INTEGER NOT NULL, PRIMARY KEY (key_id, period))")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=5)

    def add(self, name: str = "", rpm: int = 0, char_quota: int = 0, period: str = "month") -> tuple[str, ApiKey]:
        """Create a key; returns (the secret, shown once, and its record)."""
        if period not in QUOTA_PERIODS:
            raise ValueError(f"unknown quota period {period!r}; use one of {', '.join(QUOTA_PERIODS)}")
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(id=secrets.token_hex(4), name=name, rpm=max(0, rpm), created=time.time(),
                        char_quota=max(0, char_quota), period=period)
        with self._lock, self._connect() as db:
            db.execute(
                "INSERT INTO api_keys (id, name, key_hash, rpm, created, char_quota, period)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.id, record.name, _hash(secret), record.rpm, record.created, record.char_quota,
                 record.period),
            )
        return secret, record

    def list(self) -> list[ApiKey]:
        with self._connect() as db:
            rows = db.execute("SELECT id, name, rpm, created, char_quota, period FROM api_keys"
                              " ORDER BY created").fetchall()
        return [ApiKey(*row) for row in rows]

    def get(self, key_id: str) -> ApiKey | None:
        with self._connect() as db:
            row = db.execute("SELECT id, name, rpm, created, char_quota, period FROM api_keys WHERE id = ?",
                             (key_id,)).fetchone()
        return ApiKey(*row) if row else None

    # --- character quotas ---------------------------------------------------------------
    def used(self, key: ApiKey, now: float | None = None) -> int:
        """Characters ``key`` has used in its current period."""
        with self._connect() as db:
            row = db.execute("SELECT chars FROM key_usage WHERE key_id = ? AND period = ?",
                             (key.id, period_label(key.period, now))).fetchone()
        return row[0] if row else 0

    def charge(self, key: ApiKey, chars: int, now: float | None = None) -> int:
        """Count ``chars`` against the key's quota, atomically; QuotaExceeded (nothing counted) if
        they do not fit. Returns what the key has used in its period, these included."""
        bucket = period_label(key.period, now)
        with self._lock, self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT chars FROM key_usage WHERE key_id = ? AND period = ?",
                             (key.id, bucket)).fetchone()
            used = row[0] if row else 0
            if key.char_quota and used + chars > key.char_quota:
                db.rollback()
                raise QuotaExceeded(
                    f"the character quota of this API key is spent: {used:,} of {key.char_quota:,} "
                    f"characters used this {key.period if key.period != 'total' else 'key'}; this request "
                    f"needs {chars:,} more", used, key.char_quota)
            db.execute("INSERT INTO key_usage (key_id, period, chars) VALUES (?, ?, ?)"
                       " ON CONFLICT (key_id, period) DO UPDATE SET chars = chars + excluded.chars",
                       (key.id, bucket, chars))
            db.commit()
        return used + chars

    def refund(self, key: ApiKey, chars: int, now: float | None = None) -> None:
        """Give back characters charged for work that failed."""
        with self._lock, self._connect() as db:
            db.execute("UPDATE key_usage SET chars = MAX(0, chars - ?) WHERE key_id = ? AND period = ?",
                       (chars, key.id, period_label(key.period, now)))

    def remove(self, key_id: str) -> bool:
        with self._lock, self._connect() as db:
            return db.execute("DELETE FROM api_keys WHERE id = ?", (key_id,)).rowcount > 0

    def lookup(self, secret: str) -> ApiKey | None:
        wanted = _hash(secret)
        with self._connect() as db:
            rows = db.execute("SELECT id, name, rpm, created, char_quota, period, key_hash FROM api_keys").fetchall()
        found = None
        for *fields, key_hash in rows:  # compare all, in constant time each
            if hmac.compare_digest(key_hash, wanted):
                found = ApiKey(*fields)
        return found


def client_network(ip: str) -> str:
    """What an anonymous caller's limit is counted by: its IPv4 address, or its IPv6 /64.

    Anything that is not an IP address (a test client's name, a Unix socket) is counted as given.
    """
    try:
        address = ipaddress.ip_address(ip.split("%", 1)[0])  # no zone id: fe80::1%eth0
    except ValueError:
        return ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(address) >> 64 << 64, 64)))
    return str(address)


class RateLimiter:
    """Sliding one-minute windows, one per caller, in a table bounded by ``max_callers``."""

    WINDOW_S = 60.0

    def __init__(self, max_callers: int = 100_000):
        self._hits: OrderedDict[str, deque[float]] = OrderedDict()  # least recently seen first
        self._lock = threading.Lock()
        self._max_callers = max(1, max_callers)

    def __len__(self) -> int:
        return len(self._hits)

    def hit(self, caller: str, limit: int, now: float | None = None) -> None:
        if limit <= 0:
            return
        now = time.monotonic() if now is None else now
        with self._lock:
            self._forget_idle(now)
            hits = self._hits.get(caller)
            if hits is None:
                hits = self._hits[caller] = deque()
                while len(self._hits) > self._max_callers:  # full of active callers: drop the stalest
                    self._hits.popitem(last=False)
            else:
                self._hits.move_to_end(caller)
            while hits and hits[0] <= now - self.WINDOW_S:
                hits.popleft()
            if len(hits) >= limit:
                retry = max(1, math.ceil(hits[0] + self.WINDOW_S - now))
                raise RateLimited(
                    f"rate limit of {limit} requests per minute reached; retry in {retry} s", retry, limit
                )
            hits.append(now)

    def _forget_idle(self, now: float) -> None:
        """Drop callers, oldest first, whose last hit has left the window: they hold no count.

        The table is in order of last use, so this stops at the first caller still counted;
        a caller refused (no hit recorded) waits behind it until its turn at the front.
        """
        while self._hits:
            oldest = next(iter(self._hits.values()))
            if oldest and oldest[-1] > now - self.WINDOW_S:
                return
            self._hits.popitem(last=False)


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

    def __init__(self, store: KeyStore | None, *, require_key: bool, anonymous_rpm: int,
                 max_callers: int = 100_000):
        self.store = store
        self.require_key = require_key
        self.anonymous_rpm = anonymous_rpm
        self.limiter = RateLimiter(max_callers)

    @property
    def enabled(self) -> bool:
        return self.store is not None

    def charge(self, key_id: str | None, chars: int) -> None:
        """Count a request's characters against its key's quota (QuotaExceeded if spent)."""
        if self.store is None or key_id is None or chars <= 0:
            return
        key = self.store.get(key_id)
        if key is not None:
            self.store.charge(key, chars)

    def refund(self, key_id: str | None, chars: int) -> None:
        if self.store is None or key_id is None or chars <= 0:
            return
        key = self.store.get(key_id)
        if key is not None:
            self.store.refund(key, chars)

    def usage(self, key_id: str | None) -> tuple[int, int] | None:
        """(characters used this period, the quota; 0 = none) of a key, or None without one."""
        if self.store is None or key_id is None:
            return None
        key = self.store.get(key_id)
        return (self.store.used(key), key.char_quota) if key is not None else None

    def check(self, secret: str | None, ip: str) -> Caller:
        """The key rule alone, not counted against a rate limit: for routes that read back work
        (a job's status, a download, the model list), which a client may poll."""
        if self.store is None:
            return Caller(None, ip)
        if secret:
            key = self.store.lookup(secret)
            if key is None:
                raise InvalidKey("invalid API key")
            return Caller(key.id, ip)
        if self.require_key:
            raise KeyRequired(
                "an API key is required: send it as api_key or in an Authorization: Bearer header"
            )
        return Caller(None, ip)

    def admit(self, secret: str | None, ip: str) -> Caller:
        if self.store is None:
            return Caller(None, ip)
        if secret:
            key = self.store.lookup(secret)
            if key is None:
                raise InvalidKey("invalid API key")
            self.limiter.hit(f"key:{key.id}", key.rpm)
            return Caller(key.id, ip)
        if self.require_key:
            raise KeyRequired(
                "an API key is required: send it as api_key or in an Authorization: Bearer header"
            )
        self.limiter.hit(f"ip:{client_network(ip)}", self.anonymous_rpm)
        return Caller(None, ip)
