"""doc_router: the entry of a document-understanding pipeline (python BLS, ``async def
execute``, 2 instances, ``max_batch_size: 0``).

Per request, DOC [16 x k] is split into its k pages (2 to 4) and every page goes to
``doc_layout`` at once (``async_exec()`` per page, awaited with ``asyncio.gather``); the
layout signature of the pages then goes to ``doc_extract`` (one ``async_exec()``), whose
FIELDS [8] is the answer. Children carry no request id and pass ``trace=request.trace()``.

Faults, request parameter ``doc_fault`` (forwarded to one or every page's layout call):

* ``layout_hang``: page 1's layout call carries ``layout_hang_s`` (default 300): the
  doc_layout batch that holds it sleeps that long.
* ``embedded``: page 0 holds an embedded document: its layout call carries ``embedded=1``,
  and doc_layout sends that document back to doc_router (A -> B -> A).
* ``grow``: every layout call carries ``grow=1``, switching on doc_layout's leak in the
  instance that runs it.
* ``extract_hang``: the doc_extract call carries ``extract_hang_s`` (default 300): its
  batch sleeps that long (unless the response cache answers it).
* ``slow_layout``: every layout call carries ``layout_slow_ms`` (default 60): each such
  page costs doc_layout that much more (a high-resolution scan).
"""

import asyncio
import contextlib
import json

import numpy as np
import triton_python_backend_utils as pb_utils

PAGE = 16


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _page_params(params, page):
    fault = params.get("doc_fault")
    if fault == "layout_hang" and page == 1:
        hang = 300.0
        with contextlib.suppress(TypeError, ValueError):
            hang = min(max(float(params.get("layout_hang_s", 300)), 0.0), 600.0)
        return {"layout_hang_s": str(hang)}
    if fault == "embedded" and page == 0:
        return {"embedded": "1"}
    if fault == "grow":
        return {"grow": "1"}
    if fault == "slow_layout":
        slow = 60.0
        with contextlib.suppress(TypeError, ValueError):
            slow = min(max(float(params.get("layout_slow_ms", 60)), 0.0), 1000.0)
        return {"layout_slow_ms": str(slow)}
    return {}


def _extract_params(params):
    if params.get("doc_fault") != "extract_hang":
        return {}
    hang = 300.0
    with contextlib.suppress(TypeError, ValueError):
        hang = min(max(float(params.get("extract_hang_s", 300)), 0.0), 600.0)
    return {"extract_hang_s": str(hang)}


def _error(message):
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(message))


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]

    async def _layout(self, request, page, params):
        response = await pb_utils.InferenceRequest(
            model_name="doc_layout",
            requested_output_names=["BOXES"],
            inputs=[pb_utils.Tensor("PAGE", page.reshape(1, PAGE))],
            parameters=params,
            trace=request.trace(),
        ).async_exec()
        if response.has_error():
            raise RuntimeError(f"doc_layout: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "BOXES").as_numpy()

    async def _extract(self, request, sig, npages, params):
        response = await pb_utils.InferenceRequest(
            model_name="doc_extract",
            requested_output_names=["FIELDS"],
            inputs=[
                pb_utils.Tensor("SIG", np.array([sig], dtype=np.int32)),
                pb_utils.Tensor("NPAGES", np.array([npages], dtype=np.int32)),
            ],
            parameters=_extract_params(params),
            trace=request.trace(),
        ).async_exec()
        if response.has_error():
            raise RuntimeError(f"doc_extract: {response.error().message()}")
        return pb_utils.get_output_tensor_by_name(response, "FIELDS").as_numpy()

    async def _one(self, request):
        params = _params(request)
        doc = pb_utils.get_input_tensor_by_name(request, "DOC").as_numpy().astype(np.float32)
        npages = max(1, min(doc.size // PAGE, 8))
        pages = doc[: npages * PAGE].reshape(npages, PAGE)
        try:
            boxes = await asyncio.gather(
                *(self._layout(request, p, _page_params(params, i)) for i, p in enumerate(pages))
            )
            sig = int(sum(float(np.abs(b[..., :4]).sum()) for b in boxes) * 100) % 256
            fields = await self._extract(request, sig, npages, params)
        except RuntimeError as err:
            return _error(str(err))
        return pb_utils.InferenceResponse([pb_utils.Tensor("FIELDS", fields.reshape(8))])

    async def execute(self, requests):
        return [await self._one(r) for r in requests]
