"""The twenty-line translation service mtserve is measured against, as a server of its own.

    python benchmarks/wrapper_server.py MODEL.gguf --port 8793 [--threads 2 --slots 4 --ctx-per-slot 1024]

FastAPI, llama.cpp (xllamacpp, the same build mtserve uses) and a one-line prompt: no examples, no
grammar, no sentence splitting, no cleanup, no queue, no cache. It answers mtserve's
``POST /translate`` shape, so ``mtserve bench --compare http://127.0.0.1:A http://127.0.0.1:B`` drives
both over HTTP from the same client, each in its own process: an HTTP service against an HTTP
service. (``mtserve bench --compare URL wrapper`` runs the same wrapper inside the bench process.)
"""

import argparse

import uvicorn
from fastapi import FastAPI, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from mtserve.bench.targets import WrapperTarget  # the in-process wrapper: the same server, prompt and bound
from mtserve.settings import Settings


class Request(BaseModel):
    q: str
    source: str = "zh"
    target: str = "en"


def build(model: str, threads: int, slots: int, ctx_per_slot: int) -> FastAPI:
    server = WrapperTarget.llama_server(model, threads, slots, ctx_per_slot)
    max_output_tokens = Settings.model_fields["max_output_tokens"].default
    app = FastAPI()

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "engine": "wrapper", "model": model}

    @app.post("/translate")
    async def translate(request: Request, response: Response) -> dict:
        body = WrapperTarget.body(request.q, request.source, request.target, max_output_tokens)
        reply = await run_in_threadpool(server.handle_chat_completions, body)
        tokens = reply.get("usage", {}).get("completion_tokens", 0)  # the bench's tokens/s, as mtserve reports it
        response.headers["Server-Timing"] = f'segments;desc="1 segments, 0 cached, {tokens} tokens"'
        return {"translatedText": reply["choices"][0]["message"]["content"].strip()}

    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--port", type=int, default=8793)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--ctx-per-slot", type=int, default=1024)
    args = parser.parse_args()
    uvicorn.run(build(args.model, args.threads, args.slots, args.ctx_per_slot), host="127.0.0.1", port=args.port,
                log_level="warning")
