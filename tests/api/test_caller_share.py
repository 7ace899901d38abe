"""One caller cannot fill the admission queue: past its share (MTSERVE_MAX_QUEUE_PER_CALLER) it gets a
429 with Retry-After, while another caller's translation is still admitted and answered."""

from __future__ import annotations

import concurrent.futures

import httpx

from mtserve.service.access import KeyStore
from tests.fakes import FakeEngine
from tests.servers import metric_value, serve, wait_until


def test_a_callers_flood_is_refused_past_its_share_and_another_caller_is_served(tmp_path):
    store = KeyStore(tmp_path / "keys.sqlite3")
    flooder, _ = store.add(name="flooder")
    other, _ = store.add(name="other")
    engine = FakeEngine(slots=1, delays={"慢": 2.0})
    with serve(engine, home=tmp_path, api_keys=True, max_queue=8, max_queue_per_caller=3) as url, \
            concurrent.futures.ThreadPoolExecutor(4) as pool:
        def send(key: str, text: str) -> httpx.Response:
            return httpx.post(f"{url}/translate", json={"q": text, "source": "zh", "target": "en"},
                              headers={"Authorization": f"Bearer {key}"}, timeout=30)

        held = [pool.submit(send, flooder, "慢") for _ in range(3)]  # its share, all in flight
        wait_until(lambda: metric_value(url, "mtserve_num_requests_admitted") >= 3, 10,
                   "the flooder's three requests to be admitted")
        refused = send(flooder, "快")
        served = send(other, "快")
        assert [f.result().status_code for f in held] == [200, 200, 200]
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "MTSERVE_MAX_QUEUE_PER_CALLER" in refused.json()["error"]
    assert served.status_code == 200, served.text
