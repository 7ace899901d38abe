"""Schemathesis against /openapi.json on a real uvicorn (test double engine): no 5xx, ever.

Bounded: a fixed number of examples per operation, derandomized so CI runs the same cases.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.fakes import FakeEngine
from tests.servers import serve

MAX_EXAMPLES = 40


def test_no_input_makes_the_server_fail():
    failures: list[str] = []
    operations = []
    statuses: list[int] = []
    with serve(FakeEngine(slots=2), char_limit=2000) as url:
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        for result in schema.get_all_operations():
            operation = result.ok()
            operations.append(operation.label)

            @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(operation.as_strategy())
            def check(case):
                response = case.call(base_url=url, timeout=30)
                statuses.append(response.status_code)
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} {case.body!r}: "
                                    f"{response.status_code} {response.text[:200]}")
                elif response.status_code >= 400 and not ({"error", "message"} & set(response.json())):
                    # LibreTranslate and OpenAI shapes carry "error", DeepL's carries "message"
                    failures.append(
                        f"{case.method} {case.formatted_path}: non-JSON error {response.text[:200]}")

            check()
    assert {"POST /translate", "POST /translate/stream", "POST /detect", "GET /languages"} <= set(operations)
    assert len(statuses) >= 10 * len(operations)  # it really sent a bounded, non-trivial load
    assert any(400 <= s < 500 for s in statuses) and any(s == 200 for s in statuses)
    assert failures == []
