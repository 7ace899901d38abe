"""``mtserve translate``: a text, or stdin line by line, through a running server or an in-process engine.

With ``--url`` (MTSERVE_URL) each line goes to that server's ``POST /translate``, and nothing is
loaded here; without it the model loads in this process, as ``mtserve serve`` loads it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Iterable, Iterator

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
from mtserve.settings import Settings

CLIENT_TITLE = "a running server (each also MTSERVE_<NAME>)"


def add_parser(commands) -> None:
    translate = commands.add_parser(
        "translate", help="translate TEXT, or stdin line by line (empty lines kept)"
    )
    translate.add_argument("text", nargs="?", help="text to translate; omit to read stdin")
    translate.add_argument("--source", "-s", default="auto", help="source language code or auto")
    translate.add_argument("--target", "-t", default="en", help="target language code")
    translate.add_argument("--format", choices=("text", "html"), default="text",
                           help="text, or html: the markup is kept and the text between the tags translated")
    add_guidance_flags(translate)
    translate.add_argument("--no-tm", action="store_true",
                           help="leave the translation memory out: no exact matches, no retrieved examples")
    add_setting_flags(translate, CLIENT_FIELDS, CLIENT_TITLE)
    add_service_flags(translate)
    translate.set_defaults(func=cmd_translate)


def _read_lines(stream) -> Iterator[str]:
    for line in stream:
        yield line[:-1] if line.endswith("\n") else line


async def _in_order(lines: Iterable[str], translate, window: int, out) -> None:
    """Translate ``lines`` with up to ``window`` in flight; print them in input order, as they come."""
    pending: list[asyncio.Task] = []

    async def one(text: str) -> str:
        return text if not text.strip() else await translate(text)

    try:
        for line in lines:
            pending.append(asyncio.create_task(one(line)))
            if len(pending) >= window:
                print(await pending.pop(0), file=out, flush=True)
        while pending:
            print(await pending.pop(0), file=out, flush=True)
    finally:
        for task in pending:  # a failure: the lines after it are not worth waiting for
            task.cancel()


async def _translate_lines(settings: Settings, lines: Iterable[str], source: str, target: str,
                           fmt: str, out, guidance=None, tm: bool = True) -> None:
    from mtserve.engines.base import in_flight_capacity
    from mtserve.service.request import NO_GUIDANCE, TranslationRequest
    from mtserve.service.runtime import Runtime

    runtime = Runtime(settings)
    await runtime.start()
    try:
        service = await runtime.ready_service()

        async def translate(text: str) -> str:
            [result] = await service.translate(TranslationRequest([text], target, source=source, format=fmt,
                                                                  guidance=guidance or NO_GUIDANCE, memory=tm))
            return result.text

        # enough lines in flight to fill every slot or batch, within admission
        window = min(in_flight_capacity(runtime.engine), settings.max_queue)
        await _in_order(lines, translate, window, out)
    finally:
        await runtime.stop()


async def _translate_lines_on(server, lines: Iterable[str], source: str, target: str, fmt: str, out,
                              context: str = "", tm: bool = True) -> None:
    from mtserve.cli.remote import IN_FLIGHT

    async with server.async_client() as client:
        async def translate(text: str) -> str:
            return await server.translate(client, text, source, target, fmt=fmt, context=context, tm=tm)

        await _in_order(lines, translate, IN_FLIGHT, out)


def cmd_translate(args: argparse.Namespace) -> int:
    from mtserve.cli.remote import RemoteServer, ServerError
    from mtserve.engines.factory import EngineConfigError
    from mtserve.models.store import ModelStoreError
    from mtserve.service.request import FormalityUnsupported, UnsupportedLanguage
    from mtserve.service.runtime import EngineNotReady
    from mtserve.service.scheduler import DeadlineExceeded

    settings = settings_from(args)
    lines: Iterable[str] = [args.text] if args.text is not None else _read_lines(sys.stdin)
    try:
        if settings.url:
            if local := in_process_flags(args, SERVICE_FIELDS):
                return fail(in_process_only(local, settings.url))
            server = RemoteServer(settings.url, settings.api_key.get_secret_value())
            asyncio.run(_translate_lines_on(server, lines, args.source, args.target, args.format, sys.stdout,
                                            context=args.context if args.context.strip() else "", tm=not args.no_tm))
            return 0
        print(in_process_line(settings), file=sys.stderr)
        asyncio.run(_translate_lines(settings, lines, args.source, args.target, args.format, sys.stdout,
                                     guidance=guidance_from(args), tm=not args.no_tm))
    except (ServerError, ModelStoreError, EngineConfigError, EngineNotReady, UnsupportedLanguage,
            FormalityUnsupported, DeadlineExceeded) as exc:
        return fail(exc)
    except KeyboardInterrupt:
        return 130
    return 0


def in_process_only(flags: list[str], url: str) -> str:
    """Why flags that set up the work in this process are refused beside a server's URL."""
    return (f"{', '.join(flags)}: settings of the work in this process; with --url the server at {url} "
            "translates with its own: leave them out, or leave out --url (and MTSERVE_URL)")


def in_process_line(settings: Settings) -> str:
    """What a command without a server says before it loads the model."""
    return (f"mtserve: no server given: loading {settings.model} in this process "
            "(--url or MTSERVE_URL sends the work to a running server)")
