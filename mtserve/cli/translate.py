"""``mtserve translate``: a text, or stdin line by line, through an in-process engine."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Iterable, Iterator

from mtserve.cli.common import SERVICE_FIELDS, add_guidance_flags, add_setting_flags, fail, guidance_from, settings_from
from mtserve.settings import Settings


def add_parser(commands) -> None:
    translate = commands.add_parser(
        "translate", help="translate TEXT, or stdin line by line (empty lines kept)"
    )
    translate.add_argument("text", nargs="?", help="text to translate; omit to read stdin")
    translate.add_argument("--source", "-s", default="auto", help="source language code or auto")
    translate.add_argument("--target", "-t", default="en", help="target language code")
    translate.add_argument("--format", choices=("text", "html"), default="text")
    add_guidance_flags(translate)
    translate.add_argument("--no-tm", action="store_true",
                           help="leave the translation memory out: no exact matches, no retrieved examples")
    add_setting_flags(translate, SERVICE_FIELDS)
    translate.set_defaults(func=cmd_translate)


def _read_lines(stream) -> Iterator[str]:
    for line in stream:
        yield line[:-1] if line.endswith("\n") else line


async def _translate_lines(settings: Settings, lines: Iterable[str], source: str, target: str,
                           fmt: str, out, guidance=None, tm: bool = True) -> None:
    from mtserve.engines.base import in_flight_capacity
    from mtserve.service.request import NO_GUIDANCE, TranslationRequest
    from mtserve.service.runtime import Runtime

    runtime = Runtime(settings)
    await runtime.start()
    # enough lines in flight to fill every slot or batch, within admission
    window = min(in_flight_capacity(runtime.engine), settings.max_queue)
    pending: list[asyncio.Task] = []

    async def one(text: str) -> str:
        if not text.strip():
            return text
        [result] = await service.translate(TranslationRequest([text], target, source=source, format=fmt,
                                                              guidance=guidance or NO_GUIDANCE, memory=tm))
        return result.text

    try:
        service = await runtime.ready_service()
        for line in lines:  # keep a window of lines in flight; print in input order
            pending.append(asyncio.create_task(one(line)))
            if len(pending) >= window:
                print(await pending.pop(0), file=out, flush=True)
        for task in pending:
            print(await task, file=out, flush=True)
    finally:
        await runtime.stop()


def cmd_translate(args: argparse.Namespace) -> int:
    from mtserve.engines.factory import EngineConfigError
    from mtserve.models.store import ModelStoreError
    from mtserve.service.request import FormalityUnsupported, UnsupportedLanguage
    from mtserve.service.runtime import EngineNotReady
    from mtserve.service.scheduler import DeadlineExceeded

    settings = settings_from(args)
    if args.text is not None:
        lines: Iterable[str] = [args.text]
    else:
        lines = _read_lines(sys.stdin)
    try:
        asyncio.run(_translate_lines(settings, lines, args.source, args.target, args.format, sys.stdout,
                                     guidance=guidance_from(args), tm=not args.no_tm))
    except (ModelStoreError, EngineConfigError, EngineNotReady, UnsupportedLanguage, FormalityUnsupported,
            DeadlineExceeded) as exc:
        return fail(exc)
    except KeyboardInterrupt:
        return 130
    return 0
