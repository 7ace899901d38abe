"""/docs (Swagger UI) and /redoc (ReDoc) render in headless Chromium with no network but loopback.

mtserve is meant to run offline; FastAPI's own pages load their scripts from a
CDN and stay blank there. Every request the page makes to anything but the
server itself is refused here, and recorded, so a CDN dependency fails the test.
"""

from __future__ import annotations

import urllib.parse

import pytest

from tests.fakes import FakeEngine
from tests.servers import serve

pytestmark = pytest.mark.webui


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory):
    with serve(FakeEngine(), home=tmp_path_factory.mktemp("home")) as url:
        yield url


def offline_page(new_page, server: str):
    """A page whose requests outside ``server`` are aborted (and listed in ``page.refused``)."""
    page = new_page()
    allowed = urllib.parse.urlsplit(server).netloc
    refused: list[str] = []

    def route(r):
        if urllib.parse.urlsplit(r.request.url).netloc == allowed:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.refused = refused
    return page


def test_swagger_ui_renders_offline(new_page, docs_server):
    page = offline_page(new_page, docs_server)
    page.goto(f"{docs_server}/docs")
    page.wait_for_selector(".swagger-ui .info .title", state="visible")
    assert "mtserve" in page.text_content(".swagger-ui .info .title")
    page.wait_for_selector("text=/translate", state="visible")  # the operations are listed
    assert page.refused == []
    assert new_page.errors == []


def test_redoc_renders_offline(new_page, docs_server):
    page = offline_page(new_page, docs_server)
    page.goto(f"{docs_server}/redoc")
    page.wait_for_selector("redoc h1", state="visible")
    assert "mtserve" in page.text_content("redoc h1")
    assert page.refused == []
    assert new_page.errors == []
