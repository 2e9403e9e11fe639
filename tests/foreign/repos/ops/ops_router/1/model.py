"""ops_router: the document-moderation router (python BLS, ``async def execute``, 2 instances).

Per request: DOC [16 k] is cut into k pages of 16 features; each page is classified by its
own ``ops_classify`` call (``async_exec()``, one per page, gathered with ``asyncio.gather``);
the gather's done-callback keeps the first 4 scores of each page, takes the worst page and
applies the tenant's policy weights, resolving the future the request awaits; then one
``ops_enrich`` call for the tags, awaited at most ``guard_s`` (config parameter, 1 s): when
it is late the verdict is served without tags (zeros) and a warning is logged, and the late
call is left to finish on its own (it is not cancelled). Children carry no request id.

Faults, from request parameters:

* ``ops_fault=callback``: the policy lookup in the gather's done-callback raises KeyError (a
  tenant missing from the policy table); asyncio logs 'Exception in callback ...' and the
  future the request awaits is never resolved: no response, no error counted, and the
  instance's execute never returns.
* ``enrich_hang_s=S``: forwarded to the ``ops_enrich`` call as ``hang_s``.
"""

import asyncio
import functools
import json

import numpy as np
import triton_python_backend_utils as pb_utils

_PAGE = 16
_POLICY = {"default": np.array([1.0, 1.0, 0.8, 0.5], dtype=np.float32)}


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _error(text):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"ops_router: {text}"))


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        guard = config.get("parameters", {}).get("guard_s", {}).get("string_value", "1.0")
        self.guard_s = float(guard)
        self.late = set()  # enrich calls past their guard, kept until they finish

    async def execute(self, requests):
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    def _merge(self, done, tenant, gathered):
        """Done-callback of the gather: the worst page's scores, weighted by the policy."""
        if gathered.cancelled() or done.done():
            return
        if gathered.exception() is not None:
            done.set_exception(gathered.exception())
            return
        pages = []
        for response in gathered.result():
            if response.has_error():
                done.set_exception(RuntimeError(response.error().message()))
                return
            scores = pb_utils.get_output_tensor_by_name(response, "SCORES").as_numpy()
            pages.append(scores.reshape(-1)[:4])
        weights = _POLICY[tenant]  # raises KeyError for a tenant the table lacks
        done.set_result((np.max(np.stack(pages), axis=0) * weights).astype(np.float32))

    async def _one(self, request):
        params = _params(request)
        doc = pb_utils.get_input_tensor_by_name(request, "DOC").as_numpy().astype(np.float32)
        pages = doc.reshape(-1)[: (doc.size // _PAGE) * _PAGE].reshape(-1, _PAGE)
        if not len(pages):
            return _error(f"DOC must hold at least {_PAGE} values, got {doc.size}")
        calls = [
            pb_utils.InferenceRequest(
                model_name="ops_classify",
                requested_output_names=["SCORES"],
                inputs=[pb_utils.Tensor("PAGE", page.reshape(1, _PAGE))],
            ).async_exec()
            for page in pages
        ]
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        tenant = "tenant-zeta" if params.get("ops_fault") == "callback" else "default"
        gathered = asyncio.gather(*calls)
        gathered.add_done_callback(functools.partial(self._merge, done, tenant))
        try:
            verdict = await done
        except RuntimeError as err:
            return _error(f"classification failed: {err}")
        child_params = {}
        if params.get("enrich_hang_s"):
            child_params = {"hang_s": str(params["enrich_hang_s"])}
        enrich = asyncio.ensure_future(
            pb_utils.InferenceRequest(
                model_name="ops_enrich",
                requested_output_names=["TAGS"],
                inputs=[pb_utils.Tensor("FEATURES", verdict.reshape(1, 4))],
                parameters=child_params,
            ).async_exec()
        )
        finished, _ = await asyncio.wait({enrich}, timeout=self.guard_s)
        tags = np.zeros(8, dtype=np.int32)
        if finished:
            answer = enrich.result()
            if answer.has_error():
                return _error(f"enrichment failed: {answer.error().message()}")
            tags = pb_utils.get_output_tensor_by_name(answer, "TAGS").as_numpy().astype(np.int32)
        else:
            self.late.add(enrich)
            enrich.add_done_callback(self.late.discard)
            pb_utils.Logger.log_warn(
                f"ops_router: ops_enrich gave no answer within {self.guard_s:g} s; verdict "
                f"served without tags ({len(self.late)} enrich call(s) outstanding)"
            )
        return pb_utils.InferenceResponse(
            [pb_utils.Tensor("VERDICT", verdict), pb_utils.Tensor("TAGS", tags.reshape(8))]
        )
