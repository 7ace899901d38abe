"""API keys and rate limits, without HTTP."""

from __future__ import annotations

import pytest

from mtserve.service.access import AccessControl, AccessDenied, KeyStore, RateLimited, RateLimiter


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
