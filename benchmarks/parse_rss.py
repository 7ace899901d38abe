"""Peak memory of a server while it reads the largest legal upload of each document format.

Each file is built here to sit just under the default limits: an upload of just under
MTSERVE_FILES_MAX_MB, and just under the segment cap (MTSERVE_FILES_MAX_SEGMENTS); for the zip
formats an XML part just under the node cap and MTSERVE_FILES_MAX_XML_MB, padded to the upload
size with an incompressible image; for PDF the most pages and blocks the caps allow. A server with
the test double engine (no model: memory is what is measured) is started in a subprocess, each file
goes to ``POST /jobs`` of a fresh server (a process's RSS does not come back down), and the RSS
of the server process and of its parse worker are sampled every 20 ms until the job is done
(parse, translation of every segment, render).

    python benchmarks/parse_rss.py                   # parse in the worker process (the default)
    python benchmarks/parse_rss.py --workers 0       # parse in the server process, for comparison
    python benchmarks/parse_rss.py --formats docx,pdf

RSS is not timing-sensitive; the times printed are for orientation only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile import files as build  # noqa: E402  (the hostile-file builders: zips, PDFs)

MB = 1_000_000
UPLOAD = int(19.5 * MB)  # just under MTSERVE_FILES_MAX_MB (20)
SEGMENTS = 4990  # just under MTSERVE_FILES_MAX_SEGMENTS (5,000)
SENTENCE = "这是一个用于测量内存的句子，它可以代表真实文档中的一个段落。"


def padding(size: int) -> bytes:
    return random.Random(7).randbytes(size)


def text(segment_bytes: int) -> str:
    repeat = max(1, segment_bytes // len(SENTENCE.encode()))
    return SENTENCE * repeat


# --- the largest legal file of each format ------------------------------------------------------------
def largest_txt() -> bytes:
    line = text(UPLOAD // SEGMENTS - 1)
    return "\n".join(f"{i}{line}" for i in range(SEGMENTS)).encode()


def largest_md() -> bytes:
    body = text(UPLOAD // SEGMENTS - 20)
    return "\n\n".join(f"{i}{body}" for i in range(SEGMENTS)).encode()


def largest_html() -> bytes:
    body = text(UPLOAD // SEGMENTS - 20)
    paragraphs = "".join(f"<p>{i}{body}</p>\n" for i in range(SEGMENTS))
    return f"<html><body>{paragraphs}</body></html>".encode()


def largest_srt() -> bytes:
    body = text(UPLOAD // SEGMENTS - 60)
    return "".join(f"{i + 1}\n00:00:01,000 --> 00:00:02,000\n{i}{body}\n\n" for i in range(SEGMENTS)).encode()


def largest_vtt() -> bytes:
    body = text(UPLOAD // SEGMENTS - 60)
    cues = "".join(f"00:01.000 --> 00:02.000\n{i}{body}\n\n" for i in range(SEGMENTS))
    return f"WEBVTT\n\n{cues}".encode()


def largest_po() -> bytes:
    body = text(UPLOAD // SEGMENTS - 40)
    head = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    return (head + "".join(f'msgid "{i}{body}"\nmsgstr ""\n\n' for i in range(SEGMENTS))).encode()


def largest_json() -> bytes:
    import json

    body = text(UPLOAD // SEGMENTS - 20)
    return json.dumps({f"k{i}": f"{i}{body}" for i in range(SEGMENTS)}, ensure_ascii=False, indent=2).encode()


def xml_body(paragraph: str) -> str:
    """Paragraphs for SEGMENTS segments, padded with empty ones to just under the node cap."""
    nodes = 990_000  # MTSERVE_FILES_MAX_XML_NODES is 1,000,000 ("<", "=" and "&" counted)
    texts = "".join(paragraph.format(i=i) for i in range(SEGMENTS))
    empties = nodes - texts.count("<")  # an empty paragraph, <w:p/>, is one node and no segment
    return texts + "<w:p/>" * empties


def zip_with_padding(entries: list[tuple[str, bytes]], media: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    room = UPLOAD - len(out.getvalue()) - 1000
    with zipfile.ZipFile(out, "a", zipfile.ZIP_STORED) as archive:
        archive.writestr(media, padding(max(0, room)))
    return out.getvalue()


def largest_docx() -> bytes:
    body = xml_body("<w:p><w:r><w:t>{i}" + text(4000) + "</w:t></w:r></w:p>")
    return zip_with_padding([("word/document.xml", build.word_xml(body))], "word/media/image1.png")


def largest_pptx() -> bytes:
    slides, per_slide = [], SEGMENTS // 50
    a = "http://schemas.openxmlformats.org/drawingml/2006/main"
    for s in range(50):
        paragraphs = "".join(f"<a:p><a:r><a:t>{s}-{i}{text(4000)}</a:t></a:r></a:p>"
                             for i in range(per_slide))
        slide = f"<p:sld xmlns:p='p' xmlns:a='{a}'><p:txBody>{paragraphs}</p:txBody></p:sld>"
        slides.append((f"ppt/slides/slide{s + 1}.xml", slide.encode()))
    return zip_with_padding([("ppt/presentation.xml", b"<p:presentation xmlns:p='p'/>")] + slides,
                            "ppt/media/image1.png")


def largest_odt() -> bytes:
    body = "".join(f"<text:p>{i}{text(4000)}</text:p>" for i in range(SEGMENTS))
    return zip_with_padding([("mimetype", b"application/vnd.oasis.opendocument.text"),
                             ("content.xml", build.odt_content(body))], "Pictures/image1.png")


def largest_epub() -> bytes:
    chapters, per = 50, SEGMENTS // 50 - 1
    manifest = "".join(f'<item id="c{c}" href="c{c}.xhtml" media-type="application/xhtml+xml"/>'
                       for c in range(chapters))
    spine = "".join(f'<itemref idref="c{c}"/>' for c in range(chapters))
    entries = [("mimetype", b"application/epub+zip"), ("META-INF/container.xml", build.CONTAINER),
               ("OEBPS/content.opf", build.opf(manifest, spine))]
    for c in range(chapters):
        body = "".join(f"<p>{c}-{i}{text(4000)}</p>" for i in range(per))
        entries.append((f"OEBPS/c{c}.xhtml", f'<html xmlns="http://www.w3.org/1999/xhtml"><body>{body}</body>'
                                            "</html>".encode()))
    return zip_with_padding(entries, "OEBPS/image.png")


def largest_pdf() -> bytes:
    """The most pages (1,000) the cap allows, five text blocks a page, padded with an image."""
    import zlib

    count = 998
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count), build.FONT]
    for p in range(count):
        ops = b"".join(b"BT /F1 10 Tf 50 %d Td (Block %d on page %d: the quick brown fox jumps over the "
                       b"lazy dog again and again) Tj ET\n" % (700 - 120 * b, b, p) for b in range(5))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * p))
        objects.append(build.stream(zlib.compress(ops), b"/Filter /FlateDecode"))
    room = UPLOAD - len(build.pdf(objects)) - 300
    # An image no page shows: it makes the upload large without making the parse slow.
    image = b"/Type /XObject /Subtype /Image /Width 1 /Height 1 /BitsPerComponent 8 /ColorSpace /DeviceGray"
    objects.append(build.stream(padding(room), image + b" /Filter /DCTDecode"))
    return build.pdf(objects)


BUILDERS = {"txt": largest_txt, "md": largest_md, "html": largest_html, "srt": largest_srt,
            "vtt": largest_vtt, "po": largest_po, "json": largest_json, "docx": largest_docx,
            "pptx": largest_pptx, "odt": largest_odt, "epub": largest_epub, "pdf": largest_pdf}


# --- the server -----------------------------------------------------------------------------------------
SERVER = """
import sys, uvicorn
sys.path.insert(0, {root!r})
from mtserve.api.app import create_app
from mtserve.settings import Settings
from tests.fakes import FakeEngine

class Forgetful(list):
    def append(self, item):  # the test double keeps every request; here that would be the measure
        pass

engine = FakeEngine(slots=4)
engine.calls = Forgetful()
settings = Settings(port={port}, home={home!r}, files_parse_workers={workers}, files_queue=64)
uvicorn.run(create_app(settings, engine=engine), host="127.0.0.1", port={port}, log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(workers: int):
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        code = SERVER.format(root=str(ROOT), port=port, home=home, workers=workers)
        process = subprocess.Popen([sys.executable, "-c", code])
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                time.sleep(0.2)
            yield url, psutil.Process(process.pid)
        finally:
            process.terminate()
            process.wait(20)


class Sampler(threading.Thread):
    """Peak RSS of the server process and, separately, of its children (the parse worker)."""

    def __init__(self, process: psutil.Process):
        super().__init__(daemon=True)
        self.process = process
        self.server_peak = self.worker_peak = 0
        self.parsed_peak = 0  # the server's peak up to the moment the upload was answered
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.server_peak = max(self.server_peak, self.process.memory_info().rss)
                children = self.process.children(recursive=True)
                self.worker_peak = max([self.worker_peak] + [c.memory_info().rss for c in children])
            time.sleep(0.02)


def measure(url: str, process: psutil.Process, name: str, data: bytes) -> dict:
    idle = process.memory_info().rss
    sampler = Sampler(process)
    sampler.start()
    started = time.monotonic()
    r = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en"}, files={"file": (name, data)},
                   timeout=600)
    parsed_s = time.monotonic() - started
    sampler.parsed_peak = sampler.server_peak
    job = r.json()
    status, segments = (job.get("status"), job.get("total")) if r.status_code == 202 else (r.status_code, 0)
    while r.status_code == 202 and status not in ("done", "failed", "cancelled"):
        time.sleep(0.2)
        job = httpx.get(f"{url}/jobs/{job['id']}", timeout=30).json()
        status = job["status"]
    total_s = time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    return {"format": name.rsplit(".", 1)[1], "bytes": len(data), "segments": segments, "status": status,
            "error": job.get("error", ""), "idle": idle, "parse_peak": sampler.parsed_peak,
            "server_peak": sampler.server_peak, "worker_peak": sampler.worker_peak,
            "parse_s": parsed_s, "total_s": total_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1,
                        help="MTSERVE_FILES_PARSE_WORKERS (0: parse in the server process)")
    parser.add_argument("--formats", default=",".join(BUILDERS), help="comma-separated, e.g. docx,pdf")
    args = parser.parse_args()
    names = [n.strip() for n in args.formats.split(",") if n.strip()]
    built = {}
    for name in names:
        started = time.monotonic()
        built[name] = BUILDERS[name]()
        took = time.monotonic() - started
        size = len(built[name]) / MB
        print(f"built the largest legal .{name}: {size:.1f} MB in {took:.1f} s", file=sys.stderr)
    rows = []
    for name in names:  # a fresh server for each: a process's RSS does not come back down
        with server(args.workers) as (url, process):
            httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en"},  # the worker is up, warm
                       files={"file": ("warm.txt", "你好".encode())}, timeout=60)
            time.sleep(1)
            rows.append(measure(url, process, f"largest.{name}", built[name]))
            print(rows[-1], file=sys.stderr)
    mib = 2**20
    where = "in a worker process" if args.workers else "in the server process"
    print(f"\nParsing {where} (MTSERVE_FILES_PARSE_WORKERS={args.workers}); RSS in MiB, of a fresh "
          "server (idle: before the upload) and of its parse worker.\n")
    print("| format | upload MB | segments | job | server idle | server peak, parse | server peak, job "
          "| worker peak | parse s | job s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        job = row["status"] if row["status"] == "done" else f"{row['status']}: {row['error'][:60]}"
        print(f"| {row['format']} | {row['bytes'] / MB:.1f} | {row['segments']:,} | {job} "
              f"| {row['idle'] / mib:.0f} | {row['parse_peak'] / mib:.0f} | {row['server_peak'] / mib:.0f} "
              f"| {row['worker_peak'] / mib:.0f} | {row['parse_s']:.1f} | {row['total_s']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
