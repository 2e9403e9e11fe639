"""nz_router: the router of a noisy pipeline (python BLS, ``async def execute``, 2 instances).

Per request (X [8], no batching) it awaits ``nz_embed`` through ``async_exec()`` (a
done-callback moves EMB into a future that execute awaits, at most 5 s) and then
``nz_rank`` through ``async_exec()``, and answers SCORE [1]. BLS children carry no request
id.

Noisy as user code is, healthy or not: every request prints debug lines to stdout and to
stderr, logs with Python's ``logging`` (INFO, to stderr) and with ``pb_utils.Logger`` (info,
and a warning every 4th request); every 5th request of an instance misses its feature cache
(a ``KeyError`` it catches, prints with ``traceback.print_exc()`` and recovers from by
retrying without the cache). Faults, request parameter ``nz_fault``:

* ``rank_hang``: the nz_rank call carries ``rank_hang_s`` (default 300): the nz_rank batch
  that holds it sleeps that long.
* ``callback_error``: the done-callback of this request's nz_embed call raises
  (``RuntimeError``) instead of delivering EMB, so asyncio prints "Exception in callback
  ..."; execute gives up after 5 s and answers an error.
"""

import asyncio
import contextlib
import json
import logging
import sys
import traceback

import numpy as np
import triton_python_backend_utils as pb_utils

logging.basicConfig(
    stream=sys.stderr,
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("nz_router")
EMBED_WAIT_S = 5.0


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _rank_params(params):
    if params.get("nz_fault") != "rank_hang":
        return {}
    hang = 300.0
    with contextlib.suppress(TypeError, ValueError):
        hang = min(max(float(params.get("rank_hang_s", 300)), 0.0), 600.0)
    return {"rank_hang_s": str(hang)}


class _FeatureCache:
    def __init__(self):
        self.rows = {}

    def lookup(self, key):
        return self.rows[key]  # KeyError on a miss: the caller retries without the cache


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]
        self.count = 0
        self.cache = _FeatureCache()
        self.logger = getattr(pb_utils, "Logger", None)
        print(f"[nz_router] initialize {self.name}", flush=True)
        log.info("nz_router instance %s ready", self.name)

    def _deliver(self, future, fail, call):
        response = call.result()
        if fail:
            raise RuntimeError("embedding arrived with NaN norm, dropping it")
        if response.has_error():
            future.set_exception(RuntimeError(response.error().message()))
            return
        future.set_result(pb_utils.get_output_tensor_by_name(response, "EMB").as_numpy())

    async def _embed(self, x, fail):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        call = asyncio.ensure_future(
            pb_utils.InferenceRequest(
                model_name="nz_embed",
                requested_output_names=["EMB"],
                inputs=[pb_utils.Tensor("X", x.reshape(1, 8))],
            ).async_exec()
        )
        call.add_done_callback(lambda c: self._deliver(future, fail, c))
        return await asyncio.wait_for(future, EMBED_WAIT_S)

    async def _rank(self, emb, params):
        response = await pb_utils.InferenceRequest(
            model_name="nz_rank",
            requested_output_names=["SCORE"],
            inputs=[pb_utils.Tensor("EMB", emb.astype(np.float32).reshape(1, 4))],
            parameters=params,
        ).async_exec()
        if response.has_error():
            raise RuntimeError(f"nz_rank answered an error: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "SCORE").as_numpy()

    def _noise(self, x):
        n = self.count
        print(f"[nz_router] got batch of 1 (request #{n} on {self.name})", flush=True)
        print(f"[nz_router] debug: x.mean={float(x.mean()):.4f}", file=sys.stderr, flush=True)
        log.info("routing request #%d, %d features", n, x.size)
        if self.logger is not None:
            self.logger.log_info(f"nz_router: request #{n} routed by {self.name}")
            if n % 4 == 0:
                self.logger.log_warn(f"nz_router: request #{n}: embed cache is cold")
        if n % 5 == 0:
            try:
                self.cache.lookup(f"user-{n}")
            except KeyError:
                print(f"[nz_router] cache miss for user-{n}, retrying", file=sys.stderr)
                traceback.print_exc()
                sys.stderr.flush()
                log.warning("cache miss for user-%d: retried without the cache", n)

    async def _one(self, request):
        self.count += 1
        params = _params(request)
        x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy().astype(np.float32)
        self._noise(x)
        try:
            emb = await self._embed(x, params.get("nz_fault") == "callback_error")
        except asyncio.TimeoutError:
            log.error("request #%d: no embedding after %.0f s", self.count, EMBED_WAIT_S)
            return pb_utils.InferenceResponse(
                error=pb_utils.TritonError(f"no embedding after {EMBED_WAIT_S:.0f} s")
            )
        score = await self._rank(emb, _rank_params(params))
        print(f"[nz_router] done: score={float(score.ravel()[0]):.4f}", flush=True)
        return pb_utils.InferenceResponse([pb_utils.Tensor("SCORE", score.reshape(1))])

    async def execute(self, requests):
        return [await self._one(r) for r in requests]

    def finalize(self):
        print(f"[nz_router] finalize {self.name} after {self.count} requests", flush=True)
