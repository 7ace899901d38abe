"""``mtserve eval``: BLEU and chrF on a built-in set or a TSV/JSONL file.

    mtserve eval --dataset hsk --split dev --levels 4-6 --limit 200      # tune on dev
    mtserve eval --dataset hsk --split test --levels 4-6 --limit 200     # report on test
    mtserve eval pairs.tsv --source de --target en --url http://127.0.0.1:8000
    mtserve eval --markup --split test --limit 60                         # inline tags and placeholders
    mtserve eval --markup --dataset placement --split dev                 # where the tags land
    mtserve eval --markup --dataset placement --split dev --as-document docx  # ... in a .docx file
    mtserve eval --dataset software --split dev --tm software --limit 100 # with a translation memory
    mtserve eval --dataset context --split all [--no-context]             # what a request's context changes
    mtserve eval --dataset software --split test --context "These are user-interface strings of a software application."
    mtserve eval --dataset prose --split dev --as-subtitles               # sentences cut into subtitle cues
    mtserve eval --dataset hsk-paragraphs --split dev --as-wrapped-text 40  # paragraphs wrapped in a .txt
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from mtserve.cli.common import add_service_flags, settings_from
from mtserve.settings import Settings

EVAL_REQUEST_TIMEOUT_S = 600.0
TM_FIELDS = ("tm_k", "tm_min_similarity", "tm_candidates")  # what --tm is tuned with


def add_parser(commands) -> argparse.ArgumentParser:
    from mtserve.eval.datasets import BUILTIN, SPLITS

    parser = commands.add_parser(
        "eval", help="score translations with sacrebleu BLEU and chrF",
        description="Translate a set of sentences and score them against references "
                    "(sacrebleu BLEU and chrF, with their signatures). Tune on --split dev; "
                    "report on --split test.",
    )
    parser.add_argument("file", nargs="?", help="a TSV (source<TAB>reference[<TAB>group], or columns named in a "
                        "header: source, reference, id, group, context, expect) or JSONL ({\"source\", "
                        "\"reference\", \"id\"?, \"group\"?, \"context\"?, \"expect\"?}) file; omit for "
                        "--dataset")
    parser.add_argument("--dataset", default="hsk",
                        help="built-in set when no file is given: "
                        + "; ".join(f"{k}: {v}" for k, v in BUILTIN.items()))
    parser.add_argument("--source", "-s", default="zh", help="source language code (default zh)")
    parser.add_argument("--target", "-t", default="en", help="target language code (default en)")
    parser.add_argument("--split", choices=SPLITS, default=None,
                        help="dev (tuning), test (reporting) or all; default dev for a built-in set, all for a file")
    parser.add_argument("--levels", default=None,
                        help="HSK levels, e.g. 4-6 or 1,3 (hsk only; default: all six)")
    parser.add_argument("--limit", type=int, default=None,
                        help="score a sample of this many pairs (default: every pair)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's random seed (default 0)")
    # dests of their own: eval's server is named on its command line, not by MTSERVE_URL (translate's)
    parser.add_argument("--url", dest="server_url", default=None, metavar="URL",
                        help="evaluate a running server (e.g. http://127.0.0.1:8000) instead of an in-process engine")
    parser.add_argument("--api-key", dest="server_api_key", default=None, metavar="KEY",
                        help="API key for --url, if the server wants one")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight with --url (default 4)")
    parser.add_argument("--prompt", choices=("default", "plain"), default="default",
                        help="in-process only: 'plain' drops the few-shot examples and uses the one-line "
                             "system prompt (the baseline in QUALITY.md)")
    parser.add_argument("--tm", dest="tm_file", default=None, metavar="FILE",
                        help="in-process only: import this .tsv (source<TAB>target), .tmx or .po file into the "
                             "run's own translation memory, so each segment gets its most similar entries as "
                             "examples and an exact match is served as stored ('software': the software set's "
                             "TM). Without it the run's TM is empty; the TM under --home is never used")
    parser.add_argument("--worst", type=int, default=10, help="how many worst sentences to list (default 10)")
    parser.add_argument("--json", dest="json_path", default=None, help="write the JSON report here ('-': stdout)")
    parser.add_argument("--markdown", dest="markdown_path", default=None,
                        help="write the Markdown report here ('-': stdout)")
    parser.add_argument("--min-bleu", type=float, default=None, help="exit 1 if BLEU is below this")
    parser.add_argument("--min-chrf", type=float, default=None, help="exit 1 if chrF is below this")
    parser.add_argument("--markup", action="store_true",
                        help="the markup set instead: the sentences of --dataset (hsk: zh->en; everyday: en->ja "
                             "or en->de) with inline tags and placeholders; reports tag and placeholder "
                             "integrity, markup cost, edge errors and fallbacks. --dataset placement (hand-checked) "
                             "or placement-catalog (software catalogs), zh->en: also placement, the tags whose "
                             "content is on the right words, per category")
    parser.add_argument("--as-document", choices=("docx", "pptx", "odt", "md", "html"), default=None,
                        metavar="FORMAT",
                        help="with --markup: send each item as a file of FORMAT (docx, pptx, odt, md or html) "
                             "through the file path (with --url: /translate_file), read the translated file back "
                             "as markup and score it the same way; items whose tags FORMAT cannot hold are "
                             "skipped and counted")
    parser.add_argument("--no-context", action="store_true",
                        help="leave out the pairs' context (sent as the request's context otherwise): the "
                             "baseline to compare a context run with")
    parser.add_argument("--context", default=None, metavar="TEXT",
                        help="send TEXT as the request's context for every pair without one of its own (on "
                             "--dataset software, what a .po file gets: \"These are user-interface strings of a "
                             "software application.\")")
    parser.add_argument("--as-subtitles", action="store_true",
                        help="in-process only: send each pair as the cues of an .srt file (cut after each "
                             "sentence and comma, as a subtitler cuts speech) through the file path, and score "
                             "the translated cues joined")
    parser.add_argument("--as-wrapped-text", type=int, default=None, metavar="WIDTH",
                        help="in-process only: send each pair as a .txt file hard-wrapped at WIDTH columns (a CJK "
                             "character is two) through the file path, and score the translated lines joined")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    add_service_flags(parser, extra=TM_FIELDS)
    parser.set_defaults(func=cmd_eval)
    return parser


def _progress(quiet: bool):
    if quiet:
        return None

    def report(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(f"\reval: {done}/{total}", end="\n" if done == total else "", file=sys.stderr, flush=True)

    return report


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")


def check_arguments(args: argparse.Namespace) -> None:
    """The run's own arguments, checked before anything is read or loaded: a mistake in the command is
    said at once, whatever the machine has (data packages, models in the store)."""
    from mtserve.eval.datasets import DatasetError
    from mtserve.eval.targets import TargetError

    if args.file and args.levels:
        raise DatasetError("--levels applies to the built-in hsk set, not to a file")
    if args.as_subtitles and args.as_wrapped_text is not None:
        raise DatasetError("--as-subtitles or --as-wrapped-text: one file shape a run")
    if args.as_wrapped_text is not None and args.as_wrapped_text < 10:
        raise DatasetError("--as-wrapped-text WIDTH: at least 10 columns")
    if args.server_url and (args.as_subtitles or args.as_wrapped_text is not None):
        raise TargetError("--as-subtitles and --as-wrapped-text work in process only: they send each pair "
                          "through the file path of this process's service; leave out --url")
    if args.server_url and args.tm_file:
        raise TargetError("--tm works in process only: a server translates with its own translation "
                          f"memory; import the file there (`mtserve tm import FILE --source {args.source} "
                          f"--target {args.target}` with the server's home) and run without --tm")


def cmd_eval(args: argparse.Namespace) -> int:
    from mtserve.engines.factory import EngineConfigError
    from mtserve.eval.datasets import (
        SOFTWARE_TM,
        DatasetError,
        load_builtin,
        load_file,
        parse_levels,
        sample,
        with_context,
        without_context,
    )
    from mtserve.eval.runner import evaluate
    from mtserve.eval.targets import HttpTarget, InProcessTarget, TargetError
    from mtserve.models.store import ModelStoreError
    from mtserve.service.translator import UnsupportedLanguage

    if args.markup:
        return _markup_eval(args)
    if args.as_document:
        print("mtserve eval: --as-document applies to --markup", file=sys.stderr)
        return 2
    try:
        check_arguments(args)  # before a data set is read or a model looked for in the store
        if args.file:
            evalset = load_file(args.file, args.source, args.target, args.split or "all")
        else:
            evalset = load_builtin(args.dataset, args.source, args.target, args.split or "dev",
                                   parse_levels(args.levels))
        if args.limit is not None:
            evalset.pairs = sample(evalset.pairs, args.limit, args.seed)
            evalset.notes.append(f"sample of {len(evalset.pairs)} (seed {args.seed})")
        if args.no_context:
            evalset = without_context(evalset)
        elif args.context:
            evalset = with_context(evalset, args.context)
        if not evalset.pairs:
            raise DatasetError(f"the selection is empty ({evalset.name}, split {evalset.split})")
        if args.server_url:
            target = HttpTarget(args.server_url, args.server_api_key, args.concurrency)
        else:
            if args.request_timeout_s is None:  # a busy machine must not fail a long run
                args.request_timeout_s = EVAL_REQUEST_TIMEOUT_S
            if getattr(args, "engine_hang_s", None) is None and "engine_hang_s" in Settings.model_fields:
                args.engine_hang_s = EVAL_REQUEST_TIMEOUT_S * 2  # nor the watchdog restart a slow engine
            target = InProcessTarget(settings_from(args), prompt=args.prompt)
            if args.tm_file:
                target.use_memory(SOFTWARE_TM if args.tm_file == "software" else args.tm_file,
                                  evalset.source_lang, evalset.target_lang)
        if args.as_subtitles or args.as_wrapped_text:
            from mtserve.eval.as_files import FileTarget

            target = FileTarget(target, "srt" if args.as_subtitles else "txt", args.as_wrapped_text or 0)
        report = asyncio.run(evaluate(evalset, target, args.worst, _progress(args.quiet)))
    except (DatasetError, TargetError, ModelStoreError, EngineConfigError, UnsupportedLanguage) as exc:
        print(f"mtserve eval: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if args.json_path:
        _write(args.json_path, report.to_json())
    if args.markdown_path:
        _write(args.markdown_path, report.to_markdown())
    print(report.summary(), file=sys.stderr if "-" in (args.json_path, args.markdown_path) else sys.stdout)
    below = [f"{name} {value:.1f} < {floor}" for name, value, floor in
             (("BLEU", report.bleu, args.min_bleu), ("chrF", report.chrf, args.min_chrf))
             if floor is not None and value < floor]
    if below:
        print("mtserve eval: below the floor: " + "; ".join(below), file=sys.stderr)
        return 1
    return 0


def _markup_eval(args: argparse.Namespace) -> int:
    from mtserve.engines.factory import EngineConfigError
    from mtserve.eval.datasets import DatasetError, sample
    from mtserve.eval.markup import evaluate_markup, load_markup_set
    from mtserve.eval.targets import HttpTarget, InProcessTarget, TargetError
    from mtserve.models.store import ModelStoreError
    from mtserve.service.translator import UnsupportedLanguage

    try:
        if args.file:
            raise DatasetError("--markup builds its set from a built-in one (--dataset hsk, everyday, placement or "
                               "placement-catalog), not a file")
        if args.tm_file:
            raise DatasetError("--tm applies to the plain eval, not to --markup")
        mset = load_markup_set(args.dataset, args.source, args.target, args.split or "dev")
        if args.limit is not None:
            mset.items = sample(mset.items, args.limit, args.seed)  # type: ignore[arg-type]
            mset.notes.append(f"sample of {len(mset.items)} (seed {args.seed})")
        if args.as_document:
            from mtserve.eval.documents_markup import as_documents

            mset = as_documents(mset, args.as_document)
        if not mset.items:
            raise DatasetError(f"the markup selection is empty ({mset.name}, split {mset.split}"
                               + (f"; skipped as .{args.as_document}: {mset.skipped}" if mset.skipped else "") + ")")
        if args.server_url:
            target = HttpTarget(args.server_url, args.server_api_key, args.concurrency)
        else:
            if args.request_timeout_s is None:
                args.request_timeout_s = EVAL_REQUEST_TIMEOUT_S
            if getattr(args, "engine_hang_s", None) is None and "engine_hang_s" in Settings.model_fields:
                args.engine_hang_s = EVAL_REQUEST_TIMEOUT_S * 2
            target = InProcessTarget(settings_from(args), prompt=args.prompt)
        if args.as_document:
            from mtserve.eval.documents_markup import DocumentTarget

            target = DocumentTarget(target, args.as_document)
        report = asyncio.run(evaluate_markup(mset, target, _progress(args.quiet), target.concurrency))
    except (DatasetError, TargetError, ModelStoreError, EngineConfigError, UnsupportedLanguage,
            RuntimeError) as exc:
        print(f"mtserve eval: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if args.json_path:
        _write(args.json_path, report.to_json())
    print(report.summary())
    return 0
