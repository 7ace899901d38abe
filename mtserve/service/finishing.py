"""Finishing an engine result: what the model added cleaned off, the guardrails' check and their one
stricter retry, the cost accounted, and the output put in the script the caller asked for."""

from __future__ import annotations

import logging

from mtserve.engines.base import EngineRequest, PromptTooLong
from mtserve.service import guardrails
from mtserve.service.job import SegmentOutcome
from mtserve.service.metrics import Metrics
from mtserve.service.planning import to_target_script
from mtserve.service.request import Usage
from mtserve.service.scheduler import Ticket
from mtserve.text.cleanup import clean_translation

log = logging.getLogger("mtserve.service.translator")


def account(usage: Usage, outcome: SegmentOutcome) -> None:
    usage.generated_tokens += outcome.result.generated_tokens
    usage.prompt_tokens += outcome.result.prompt_tokens
    usage.queue_ms = max(usage.queue_ms, outcome.queue_ms)
    usage.engine_ms += outcome.engine_ms


async def retry(ticket: Ticket, request: EngineRequest) -> SegmentOutcome | None:
    """The outcome of a retry, or None when its prompt does not fit a slot: the strict prompt's
    examples make it longer than the first attempt's (~630 tokens more), and a first answer that
    fitted is worth more than a failed segment."""
    try:
        [outcome] = await ticket.wait([ticket.submit(request)])
    except PromptTooLong as exc:
        log.info("retry over the context", extra={"event": "retry_too_long", "error": str(exc)})
        return None
    return outcome


class Finisher:
    """Cleans and checks engine results. ``guarded``: the retry is a stricter *prompt*, so it is for
    engines that translate by prompting an LLM, when the guardrails are on."""

    def __init__(self, metrics: Metrics, guarded: bool):
        self.metrics = metrics
        self.guarded = guarded

    async def finish(self, ticket: Ticket, request: EngineRequest, outcome: SegmentOutcome, usage: Usage,
                     target: str, terms: dict[str, str], guard: bool = True) -> str:
        """Clean an engine result, retry once if the guardrails reject it, and convert the script."""
        cleaned = clean_translation(outcome.result.text, request.text)
        if guard and self.guarded:
            glossary = dict(request.glossary)
            context = request.guidance.context
            problem = guardrails.check(request.text, cleaned, request.source, request.target,
                                       glossary=glossary, finish_reason=outcome.result.finish_reason,
                                       context=context)
            if problem is not None:
                self.metrics.guardrail_retries.labels(reason=problem.kind).inc()
                log.info("guardrail retry", extra={"event": "guardrail_retry", "reason": problem.kind,
                                                   "detail": problem.detail})
                retried = await retry(ticket, guardrails.retry_request(request, problem))
                if retried is None:
                    self.metrics.guardrail_unresolved.labels(reason=problem.kind).inc()
                    usage.content_dropped += problem.kind in guardrails.LOST_CONTENT
                    return to_target_script(cleaned, target, terms)
                account(usage, retried)
                second = clean_translation(retried.result.text, request.text)
                second_problem = guardrails.check(request.text, second, request.source, request.target,
                                                  glossary=glossary, finish_reason=retried.result.finish_reason,
                                                  context=context)
                cleaned, unresolved = guardrails.choose(cleaned, problem, second, second_problem)
                if unresolved:
                    self.metrics.guardrail_unresolved.labels(reason=(second_problem or problem).kind).inc()
                    usage.content_dropped += (second_problem or problem).kind in guardrails.LOST_CONTENT
        return to_target_script(cleaned, target, terms)
