"""bg_stream: the chunked-search front door (python, decoupled, 1 instance, no batching).

``execute`` hands each request's response sender to a ``ThreadPoolExecutor``
(``BG_STREAM_WORKERS`` in the server's environment, default 4 workers) and returns None at
once, as Triton's decoupled examples do with threads. The worker splits QUERY [n] INT32 into
k = 3 to 6 chunks of 8 ids, and for each: one BLS call to bg_embed (``exec()``, from the
worker thread; no request id, no trace), the top 4 hits of the embedding, one HITS [4] +
SCORE [1] response, 25 ms. Then ``TRITONSERVER_RESPONSE_COMPLETE_FINAL``. Nobody reads the
futures: an exception raised in a worker is kept in its future and never seen.

Faults, request parameters (passed by the client):

* ``bg_exact=1``: the exact-match shortcut sends every chunk's response and returns without
  the final flag (the forgotten ``sender.send(flags=FINAL)``);
* ``bg_hold_s=S``: after its first response the worker waits S s (at most 600) on a slow
  shard, holding its pool thread;
* ``bg_embed_hang_s=S``: the bg_embed call of the second chunk carries ``hang_s=S``;
* ``bg_die_after=N``: the worker raises RuntimeError after N responses (swallowed by the
  future).
"""

import concurrent.futures
import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

_FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
_CHUNK = 8


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _number(params, key, default):
    try:
        return float(params.get(key, default))
    except (TypeError, ValueError):
        return default


class TritonPythonModel:
    def initialize(self, args):
        workers = int(os.environ.get("BG_STREAM_WORKERS", "4") or 4)
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="bg_search"
        )
        rng = np.random.default_rng(11)
        self.index = rng.standard_normal((64, 16)).astype(np.float32)

    def _embed(self, chunk, hang_s):
        params = {"hang_s": str(hang_s)} if hang_s > 0 else {}
        child = pb_utils.InferenceRequest(
            model_name="bg_embed",
            requested_output_names=["EMB"],
            inputs=[pb_utils.Tensor("CHUNK", chunk.reshape(1, _CHUNK))],
            parameters=params,
        )
        answer = child.exec()
        if answer.has_error():
            raise RuntimeError(f"bg_embed: {answer.error().message()}")
        return pb_utils.get_output_tensor_by_name(answer, "EMB").as_numpy().reshape(16)

    def _search(self, sender, query, params):
        chunks = 3 + int(query.size) % 4
        padded = np.resize(query.astype(np.int32), chunks * _CHUNK)
        hold_s = min(_number(params, "bg_hold_s", 0), 600.0)
        embed_hang_s = min(_number(params, "bg_embed_hang_s", 0), 600.0)
        die_after = int(_number(params, "bg_die_after", -1))
        exact = int(_number(params, "bg_exact", 0)) == 1
        for k in range(chunks):
            if k == die_after:
                raise RuntimeError(f"bg_stream: shard {k} returned no postings")
            emb = self._embed(padded[k * _CHUNK : (k + 1) * _CHUNK], embed_hang_s if k == 1 else 0)
            scores = self.index @ emb
            hits = np.argsort(-scores)[:4].astype(np.int32)
            response = pb_utils.InferenceResponse(
                [
                    pb_utils.Tensor("HITS", hits),
                    pb_utils.Tensor("SCORE", scores[hits[:1]].astype(np.float32)),
                ]
            )
            if sender.is_cancelled():
                break
            sender.send(response)
            if k == 0 and hold_s > 0:
                time.sleep(hold_s)
            time.sleep(0.025)
        if exact:
            return  # the shortcut: every hit sent, the final flag forgotten
        sender.send(flags=_FINAL)

    def execute(self, requests):
        for request in requests:
            query = pb_utils.get_input_tensor_by_name(request, "QUERY").as_numpy().reshape(-1)
            self.pool.submit(self._search, request.get_response_sender(), query, _params(request))
        return None

    def finalize(self):
        self.pool.shutdown(wait=False, cancel_futures=True)
