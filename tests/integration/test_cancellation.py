"""Cancellation with the real llama.cpp engine: a deadline, a client that hangs up (plain or
streaming) and a cancelled document job each stop the decode and free the slot.

The fake-engine versions (tests/api, tests/documents) prove the service passes the cancel on; these
prove llama.cpp acts on it. The server has one slot, so "the slot is free" is literal: the
``mtserve_num_segments_running`` gauge drops only when the engine call returns. A decode that ran on
for nobody would hold the slot for the rest of a long translation; a cancelled one frees it within a
token or two, or at the end of the prompt's prefill if the cancel came during it (llama.cpp hears
the cancel at its next streamed token). The bounds come from this machine's own pace, measured
first: the prefill time of the long text and the time per streamed token.
"""

from __future__ import annotations

import dataclasses
import time

import httpx
import pytest

from tests.servers import GENERATED_TOKENS, metric_value, real_server

pytestmark = pytest.mark.model

# One long sentence (one segment, under segment_max_chars): its translation runs to 150 tokens or
# more, so a decode that is not stopped holds the slot for well over MIN_OUTPUT_TOKENS tokens.
LONG_TEXT = ("我们早上七点起床，洗脸刷牙以后吃了一顿简单的早饭，然后带着书包坐公共汽车去学校，"
             "路上看见很多人骑自行车上班，到了学校以后先去图书馆还了两本书，又借了一本关于中国历史的新书，"
             "上午我们有数学课和英语课，中午在食堂和朋友们一起吃饭聊天，下午老师带我们去公园画画，"
             "大家都画了湖边的大树和远处的高山，放学以后我去超市买了水果和牛奶，回家帮妈妈做晚饭，"
             "晚上做完作业又看了一会儿电视才睡觉。")
MIN_OUTPUT_TOKENS = 100  # a floor on LONG_TEXT's translation length; the pace check below sees part of it
PACE_DELTAS = 12
RUNNING = "mtserve_num_segments_running"
IDLE_WAIT_S = 300  # a bounded wait; the assertions use the pace-derived bounds, printed


@dataclasses.dataclass(frozen=True)
class Pace:
    first_s: float  # request sent -> first streamed token of LONG_TEXT (mostly prefill)
    per_token_s: float  # between streamed tokens after that

    def freed_within_s(self, in_prefill: bool, tokens: float = MIN_OUTPUT_TOKENS / 2) -> float:
        """How long a cancelled decode may take to free its slot: ``tokens`` (by default half the
        decode a non-cancelled one would still run), plus a prefill if the cancel may have come
        during one, plus a second for polling."""
        return (self.first_s if in_prefill else 0.0) + tokens * self.per_token_s + 1.0


def long_text(day: str) -> str:
    """LONG_TEXT with its own beginning: llama.cpp's prompt cache reuses a common prefix, so a text
    a slot has seen before would skip its prefill and finish sooner than the bounds assume."""
    return f"{day}，{LONG_TEXT}"


@pytest.fixture(scope="module")
def cancel_server(model_path):
    """One slot and one thread (two llama.cpp threads spin at a barrier on a busy 2-core box)."""
    with real_server(model_path, {"MTSERVE_N_PARALLEL": "1", "MTSERVE_THREADS": "1",
                                  "MTSERVE_REQUEST_TIMEOUT_S": "300"}) as (url, proc):
        yield url


def stream_deltas(url: str, text: str, count: int) -> list[float]:
    """Stream ``text``, take ``count`` delta events, hang up; the times they came, from the send."""
    times: list[float] = []
    t0 = time.monotonic()
    with httpx.stream("POST", f"{url}/translate/stream", timeout=300,
                      json={"q": text, "source": "zh", "target": "en"}) as r:
        assert r.status_code == 200
        kind = None
        for line in r.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and kind == "delta":
                times.append(time.monotonic() - t0)
                if len(times) == count:
                    break  # hang up mid-decode
            elif line.startswith("data:") and kind == "done":
                raise AssertionError(f"LONG_TEXT finished after {len(times)} deltas; it must be longer")
    return times


def wait_until_idle(url: str) -> float:
    """Seconds until no segment runs and no request is admitted (bounded by IDLE_WAIT_S)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < IDLE_WAIT_S:
        queue = httpx.get(f"{url}/health/details", timeout=10).json()["queue"]
        if metric_value(url, RUNNING) == 0 and queue["admitted"] == 0 and queue["segments_waiting"] == 0:
            return time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError(f"the slot was still busy {IDLE_WAIT_S} s after the cancel")


@pytest.fixture(scope="module")
def pace(cancel_server) -> Pace:
    times = stream_deltas(cancel_server, long_text("星期天"), PACE_DELTAS)
    wait_until_idle(cancel_server)
    measured = Pace(first_s=times[0], per_token_s=(times[-1] - times[0]) / (len(times) - 1))
    print(f"\npace: first token after {measured.first_s:.2f} s, "
          f"then {measured.per_token_s * 1000:.0f} ms a token")
    return measured


def short_request_after(url: str) -> float:
    """A short translation on the freed slot: it is answered, by the engine; its latency."""
    generated = metric_value(url, GENERATED_TOKENS)
    t0 = time.monotonic()
    r = httpx.post(f"{url}/translate", json={"q": "我喜欢猫。", "source": "zh", "target": "en"}, timeout=300)
    latency = time.monotonic() - t0
    assert r.status_code == 200 and "cat" in r.json()["translatedText"].lower(), r.text
    assert metric_value(url, GENERATED_TOKENS) > generated
    return latency


def test_a_deadline_stops_the_real_decode_and_frees_the_slot(cancel_server, pace):
    timeout_s = round(max(1.0, pace.first_s / 2), 1)  # in the prefill or early in the decode
    t0 = time.monotonic()
    r = httpx.post(f"{cancel_server}/translate", timeout=300,
                   json={"q": long_text("星期一"), "source": "zh", "target": "en", "timeout": timeout_s})
    answered_s = time.monotonic() - t0
    freed_s = wait_until_idle(cancel_server)
    next_s = short_request_after(cancel_server)
    bound = pace.freed_within_s(in_prefill=True)
    print(f"\ndeadline {timeout_s} s: 504 after {answered_s:.2f} s; slot free {freed_s:.2f} s later "
          f"(bound {bound:.1f} s); next request {next_s:.2f} s")
    assert r.status_code == 504 and "deadline" in r.json()["error"], r.text
    assert answered_s < timeout_s + bound  # the answer did not wait for the decode
    assert freed_s < bound
    assert next_s < bound + 2 * pace.first_s  # nothing was still decoding ahead of it


def test_a_client_that_hangs_up_mid_request_frees_the_slot(cancel_server, pace):
    patience_s = round(max(1.0, pace.first_s / 2), 1)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{cancel_server}/translate", timeout=httpx.Timeout(patience_s),
                   json={"q": long_text("星期二"), "source": "zh", "target": "en"})
    freed_s = wait_until_idle(cancel_server)
    bound = pace.freed_within_s(in_prefill=True)
    print(f"\nclient gone after {patience_s} s: slot free {freed_s:.2f} s later (bound {bound:.1f} s)")
    assert freed_s < bound
    short_request_after(cancel_server)


def test_a_client_that_hangs_up_mid_stream_frees_the_slot(cancel_server, pace):
    times = stream_deltas(cancel_server, long_text("星期三"), 3)  # decoding has begun: a cancel lands in it
    freed_s = wait_until_idle(cancel_server)
    bound = pace.freed_within_s(in_prefill=False)
    print(f"\nstream dropped after {times[-1]:.2f} s: slot free {freed_s:.2f} s later (bound {bound:.1f} s)")
    assert freed_s < bound
    short_request_after(cancel_server)


def test_a_cancelled_document_job_stops_its_decode(cancel_server, pace):
    r = httpx.post(f"{cancel_server}/jobs", data={"source": "zh", "target": "en"},
                   files={"file": ("day.txt", long_text("星期四").encode())}, timeout=60)
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    deadline = time.monotonic() + IDLE_WAIT_S
    while metric_value(cancel_server, RUNNING) < 1:  # its segment is in the engine
        assert time.monotonic() < deadline, "the job's segment never started"
        time.sleep(0.05)
    generated = metric_value(cancel_server, GENERATED_TOKENS)
    cancelled = httpx.delete(f"{cancel_server}/jobs/{job_id}", timeout=60)
    freed_s = wait_until_idle(cancel_server)
    job = httpx.get(f"{cancel_server}/jobs/{job_id}", timeout=60).json()
    bound = pace.freed_within_s(in_prefill=True)
    print(f"\njob cancelled: slot free {freed_s:.2f} s later (bound {bound:.1f} s)")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled", cancelled.text
    assert freed_s < bound
    assert job["status"] == "cancelled" and job["done"] == 0 and job["translatedFileUrl"] is None
    assert metric_value(cancel_server, GENERATED_TOKENS) == generated  # the segment did not run to its end
    short_request_after(cancel_server)


def test_cancelled_segments_queued_inside_llama_cpp_do_not_hold_the_slot(cancel_server, pace):
    """Three segments on one slot (two of them queued inside llama.cpp, queue_ahead) past their deadline
    free the slot within one prefill: a queued segment is told to stop before it gets a prefill of its
    own. Measured at 3.4-4.8 s against bounds of 6.2-7.2 s; with each queued segment given its full
    prefill before it could be told to stop, the slot was free after 32 s against a 19 s bound."""
    three = "".join(long_text(day) for day in ("星期五", "星期六", "周末"))  # three segments
    timeout_s = round(max(1.0, pace.first_s / 2), 1)
    r = httpx.post(f"{cancel_server}/translate", timeout=300,
                   json={"q": three, "source": "zh", "target": "en", "timeout": timeout_s})
    freed_s = wait_until_idle(cancel_server)
    bound = pace.freed_within_s(in_prefill=True, tokens=5)  # one prefill, for the segment in the slot
    print(f"\nthree segments past their deadline: slot free {freed_s:.2f} s later (bound {bound:.1f} s)")
    assert r.status_code == 504, r.text
    assert freed_s < bound
