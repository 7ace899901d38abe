"""API keys and rate limits, without HTTP."""

from __future__ import annotations

import pytest

from mtserve.service.access import (
    AccessControl,
    AccessDenied,
    KeyStore,
    RateLimited,
    RateLimiter,
    client_network,
)


def test_keys_are_stored_hashed_and_found_by_their_secret(tmp_path):
    store = KeyStore(tmp_path / "keys.sqlite3")
    secret, key = store.add(name="ci", rpm=10)
    assert secret.startswith("mts_") and len(secret) > 40
    assert store.lookup(secret) == key
    assert store.lookup(secret + "x") is None
    raw = (tmp_path / "keys.sqlite3").read_bytes()
    assert secret.encode() not in raw  # only the hash is on disk
    assert [k.id for k in store.list()] == [key.id]
    assert store.remove(key.id) and store.lookup(secret) is None
    assert not store.remove(key.id)


def test_rate_limiter_slides_over_one_minute():
    limiter = RateLimiter()
    for i in range(3):
        limiter.hit("a", 3, now=100.0 + i)
    with pytest.raises(RateLimited) as info:
        limiter.hit("a", 3, now=110.0)
    assert info.value.retry_after_s == 50  # the first hit leaves the window at t=160
    limiter.hit("b", 3, now=110.0)  # callers are counted apart
    limiter.hit("a", 3, now=160.5)  # the first hit has left the window


def test_access_control_policy(tmp_path):
    store = KeyStore(tmp_path / "keys.sqlite3")
    secret, key = store.add(rpm=1)
    open_access = AccessControl(None, require_key=True, anonymous_rpm=1)
    assert open_access.admit(None, "1.2.3.4").key_id is None  # off: everything passes
    policy = AccessControl(store, require_key=False, anonymous_rpm=2)
    assert policy.admit(secret, "ip").label == f"key:{key.id}"
    with pytest.raises(RateLimited):
        policy.admit(secret, "ip")
    with pytest.raises(AccessDenied, match="invalid API key"):
        policy.admit("mts_wrong", "ip")
    policy.admit(None, "ip1")
    policy.admit(None, "ip1")
    with pytest.raises(RateLimited):
        policy.admit(None, "ip1")
    strict = AccessControl(store, require_key=True, anonymous_rpm=0)
    with pytest.raises(AccessDenied, match="required"):
        strict.admit(None, "ip")


# --- anonymous callers by network, and a bounded table ---------------------------------------------
@pytest.mark.parametrize("ip, network", [
    ("203.0.113.7", "203.0.113.7"),
    ("::ffff:203.0.113.7", "203.0.113.7"),  # IPv4-mapped IPv6 is the IPv4 caller
    ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
    ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
    ("fe80::1%eth0", "fe80::/64"),
    ("testclient", "testclient"),  # not an address: counted as given
])
def test_anonymous_callers_are_counted_per_ipv4_address_or_ipv6_slash_64(ip, network):
    assert client_network(ip) == network


def test_rotating_ipv6_addresses_inside_one_64_share_one_limit(tmp_path):
    store = KeyStore(tmp_path / "keys.sqlite3")
    policy = AccessControl(store, require_key=False, anonymous_rpm=3)
    for host in range(3):
        policy.admit(None, f"2001:db8:0:7::{host + 1:x}")
    with pytest.raises(RateLimited):
        policy.admit(None, "2001:db8:0:7:ffff:ffff:ffff:ffff")  # a fourth address, the same /64
    policy.admit(None, "2001:db8:0:8::1")  # the next /64 is another caller
    for _ in range(3):
        policy.admit(None, "198.51.100.1")
    with pytest.raises(RateLimited):
        policy.admit(None, "::ffff:198.51.100.1")  # the same IPv4 caller, written as IPv6
    policy.admit(None, "198.51.100.2")  # IPv4 is per address


def test_idle_callers_are_forgotten_so_the_table_stays_small():
    limiter = RateLimiter()
    for i in range(1000):  # a thousand callers, one hit each, a millisecond apart
        limiter.hit(f"ip:{i}", 5, now=1000.0 + i / 1000)
    assert len(limiter) == 1000
    limiter.hit("ip:late", 5, now=1000.0 + 61)  # a minute later every one of them is idle
    assert len(limiter) == 1
    print(f"callers tracked after the window: {len(limiter)}")


def test_an_idle_caller_is_forgotten_but_an_active_one_keeps_its_count():
    limiter = RateLimiter()
    limiter.hit("idle", 2, now=0.0)
    limiter.hit("busy", 2, now=30.0)
    limiter.hit("busy", 2, now=40.0)
    limiter.hit("other", 2, now=61.0)  # idle's only hit has left the window; busy's two have not
    assert len(limiter) == 2
    with pytest.raises(RateLimited):
        limiter.hit("busy", 2, now=62.0)


def test_the_table_never_holds_more_than_max_callers():
    limiter = RateLimiter(max_callers=100)
    for i in range(1000):  # all within one window: none is idle
        limiter.hit(f"ip:{i}", 2, now=1.0 + i / 1000)
    assert len(limiter) == 100
    limiter.hit("ip:999", 2, now=2.0)  # the most recent callers are the ones kept, with their counts
    with pytest.raises(RateLimited):
        limiter.hit("ip:999", 2, now=2.0)


# --- character quotas ---------------------------------------------------------------------------
def test_a_quota_counts_characters_per_period_and_refuses_what_does_not_fit(tmp_path):
    from mtserve.service.access import KeyStore, QuotaExceeded, period_label

    store = KeyStore(tmp_path / "keys.sqlite3")
    _, key = store.add(name="q", char_quota=100, period="month")
    december, january = 1_796_083_200.0, 1_798_761_600.0  # 2026-12-01 and 2027-01-01, UTC
    assert period_label("month", december) == "2026-12" and period_label("month", january) == "2027-01"
    assert store.charge(key, 60, now=december) == 60
    with pytest.raises(QuotaExceeded) as refused:
        store.charge(key, 41, now=december)
    assert (refused.value.used, refused.value.limit) == (60, 100)
    assert store.charge(key, 40, now=december) == 100  # exactly the quota fits
    assert store.charge(key, 100, now=january) == 100  # a new month starts from zero
    store.refund(key, 30, now=january)
    assert store.used(key, now=january) == 70


def test_quotas_survive_a_restart_and_an_old_keys_file_gains_them(tmp_path):
    import sqlite3

    from mtserve.service.access import KeyStore

    path = tmp_path / "keys.sqlite3"
    with sqlite3.connect(path) as db:  # a keys file from before quotas
        db.execute("CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL"
                   " UNIQUE, rpm INTEGER NOT NULL, created REAL NOT NULL)")
        db.execute("INSERT INTO api_keys VALUES ('old1', 'old', 'h', 0, 0)")
    store = KeyStore(path)
    assert store.get("old1").char_quota == 0
    _, key = store.add(char_quota=10, period="total")
    store.charge(key, 7)
    again = KeyStore(path)
    assert again.used(again.get(key.id)) == 7 and again.get(key.id).period == "total"


def test_concurrent_charges_never_pass_the_quota(tmp_path):
    import threading

    from mtserve.service.access import KeyStore, QuotaExceeded

    store = KeyStore(tmp_path / "keys.sqlite3")
    _, key = store.add(char_quota=50)
    refused = []

    def spend():
        try:
            store.charge(key, 10)
        except QuotaExceeded:
            refused.append(1)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.used(key) == 50 and len(refused) == 3
