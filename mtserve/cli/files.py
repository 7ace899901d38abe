"""``mtserve translate-file IN --target en [--source auto] [-o OUT]``: a document, with a progress bar.

With ``--url`` (MTSERVE_URL) the document goes to that server's job API (``POST /jobs``, its progress
followed on ``/jobs/{id}/events``, the result downloaded), and nothing is loaded here; the server's
limits (size, segments, formats) apply. Without it the model runs in this process, as for ``mtserve
translate``, and the document goes through the same reader, runner and renderer as ``POST
/translate_file``; server limits do not apply to local files, the bounds on what a file may expand to
(MTSERVE_FILES_MAX_EXPANDED_MB and the others) do.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from mtserve.cli.common import (
    CLIENT_FIELDS,
    SERVICE_FIELDS,
    add_guidance_flags,
    add_service_flags,
    add_setting_flags,
    fail,
    guidance_from,
    in_process_flags,
    settings_from,
)
from mtserve.cli.translate import CLIENT_TITLE, in_process_line, in_process_only
from mtserve.settings import Settings

IN_PROCESS_FIELDS = SERVICE_FIELDS + ("files_chunk", "files_xlsx_sheet_names")


def add_parser(commands) -> None:
    from mtserve.documents.formats.registry import FORMATS  # light: format libraries load on use

    extensions = ", ".join(f.extensions[0] for f in FORMATS)
    parser = commands.add_parser(
        "translate-file", help=f"translate a document ({extensions}), keeping its structure",
        description="Translate a document and write the same kind of file (a PDF may become a DOCX "
                    "when no installed font covers the translation).")
    parser.add_argument("input", type=Path, help="the document to translate")
    parser.add_argument("--target", "-t", required=True, help="target language code")
    parser.add_argument("--source", "-s", default="auto", help="source language code or auto")
    parser.add_argument("--output", "-o", type=Path, default=None,
                        help="where to write the translation (default: IN.TARGET.EXT next to IN)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar and notes")
    add_guidance_flags(parser, file_default=True)
    add_setting_flags(parser, CLIENT_FIELDS, CLIENT_TITLE)
    add_setting_flags(parser, ("files_xlsx_sheet_names",), "the document, in process (each also MTSERVE_<NAME>)")
    add_service_flags(parser, extra=("files_chunk",))
    parser.set_defaults(func=cmd_translate_file)


def default_output(path: Path, target: str, extension: str) -> Path:
    return path.with_name(f"{path.stem}.{target}.{extension}")


async def translate_file(settings: Settings, path: Path, source: str, target: str, output: Path | None,
                         *, engine=None, progress: bool = True, err=sys.stderr, guidance=None) -> Path:
    """Translate ``path`` into ``output`` (or the default name next to it); returns where it went."""
    from mtserve.documents.formats.limits import Limits
    from mtserve.documents.formats.registry import FORMATS, ReadOptions, read_document
    from mtserve.documents.jobs.runner import translate_document
    from mtserve.service.runtime import Runtime

    data = await asyncio.to_thread(path.read_bytes)
    # A local file is the user's own: no segment cap, but the same bounds on what it may expand to.
    document = await asyncio.to_thread(read_document, path.name, data, FORMATS, ReadOptions.from_settings(settings),
                                       limits=Limits.from_settings(settings, segments=False))
    runtime = Runtime(settings, engine)
    await runtime.start()
    bar = None
    try:
        service = await runtime.ready_service()
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(document.segments), unit="seg", desc=path.name, file=err, leave=True)

        def on_progress(done: int, total: int) -> None:
            if bar is not None:
                bar.update(done - bar.n)
                section = document.section_at(min(done, total - 1)) if total else None
                if section:
                    bar.set_postfix_str(section, refresh=False)

        result = await translate_document(service, document, source, target,
                                          chunk_size=settings.files_chunk, on_progress=on_progress,
                                          guidance=guidance)
    finally:
        if bar is not None:
            bar.close()
        await runtime.stop()
    destination = _written(path, target, output, result.output.extension, result.output.data)
    if progress:
        detected = None if result.detected is None else result.detected.confidence
        _report(result.source, detected, result.notes, output, result.output.extension, err)
    return destination


def translate_file_on(server, path: Path, source: str, target: str, output: Path | None, *,
                      progress: bool = True, err=sys.stderr, context: str = "") -> Path:
    """``translate_file`` through a running server (``mtserve.cli.remote.RemoteServer``): the same bar,
    notes and output, with the server's job doing the work."""
    if output is not None and output.resolve() == path.resolve():  # before the upload, not after the work
        raise ValueError(f"the output {output} is the input file; choose another with -o")
    data = path.read_bytes()
    bar = None

    def on_progress(job: dict) -> None:
        nonlocal bar
        if not progress or not job.get("total"):  # the total is known once the server has read the file
            return
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(total=job["total"], unit="seg", desc=path.name, file=err, leave=True)
        bar.update(job["done"] - bar.n)
        if job.get("section"):
            bar.set_postfix_str(job["section"], refresh=False)

    try:
        result = server.translate_file(path, data, source, target, context=context, on_progress=on_progress)
    finally:
        if bar is not None:
            bar.close()
    destination = _written(path, target, output, result.extension, result.data)
    if progress:
        detected = None if result.detected is None else result.detected.get("confidence", 0)
        _report(result.source, detected, result.notes, output, result.extension, err)
    return destination


def _written(path: Path, target: str, output: Path | None, extension: str, data: bytes) -> Path:
    destination = output or default_output(path, target, extension)
    if destination.resolve() == path.resolve():
        raise ValueError(f"the output {destination} is the input file; choose another with -o")
    destination.write_bytes(data)
    return destination


def _report(source: str, detected: float | None, notes: list[str], output: Path | None, extension: str,
            err) -> None:
    """The lines after the bar: the detected language, the format's notes, a changed file type."""
    if detected is not None:
        print(f"source language: {source} (detected, {detected:.0f}%)", file=err)
    for note in notes:
        print(f"note: {note}", file=err)
    if output is not None and output.suffix.lstrip(".") != extension:
        print(f"note: the result is a .{extension} file", file=err)


def cmd_translate_file(args: argparse.Namespace) -> int:
    from mtserve.cli.remote import RemoteServer, ServerError
    from mtserve.documents.formats.base import DocumentError
    from mtserve.engines.factory import EngineConfigError
    from mtserve.models.store import ModelStoreError
    from mtserve.service.runtime import EngineNotReady
    from mtserve.service.scheduler import DeadlineExceeded
    from mtserve.service.translator import UnsupportedLanguage

    settings = settings_from(args)
    if not args.input.is_file():
        return fail(f"{args.input}: no such file")
    try:
        if settings.url:
            if local := in_process_flags(args, IN_PROCESS_FIELDS):
                return fail(in_process_only(local, settings.url))
            server = RemoteServer(settings.url, settings.api_key.get_secret_value())
            written = translate_file_on(server, args.input, args.source, args.target, args.output,
                                        progress=not args.quiet,
                                        context=args.context if args.context.strip() else "")
        else:
            if not args.quiet:
                print(in_process_line(settings), file=sys.stderr)
            written = asyncio.run(translate_file(settings, args.input, args.source, args.target, args.output,
                                                 progress=not args.quiet, guidance=guidance_from(args)))
    except (ServerError, DocumentError, ModelStoreError, EngineConfigError, EngineNotReady, UnsupportedLanguage,
            DeadlineExceeded, ValueError, OSError) as exc:
        return fail(exc)
    except KeyboardInterrupt:
        return 130
    print(written)
    return 0
