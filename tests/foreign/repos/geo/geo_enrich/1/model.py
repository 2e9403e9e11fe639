"""geo_enrich: looks up the points of interest of a tile's cells (python BLS, ``async def
execute``, 2 instances).

Per request (GRID [1, 8, 8], CELLS [1, 4]) it sends one ``geo_lookup`` call per cell
(KEY [1] INT64 -> ATTR [3] FP32, ``max_batch_size: 0``) with ``async_exec()`` and awaits
them together with ``asyncio.gather``; POI [1, n, 3] is the gathered rows. Children carry no
request id and are built with ``trace=request.trace()``. A child's error is answered as an
error response naming it. Nothing is logged by this model.

Faults, request parameter ``geo_fault`` (the ensemble passes request parameters on):

* ``lookup_hang``: the first lookup call carries ``hang_s`` (default 300): geo_lookup's
  only instance sleeps that long in it.
* ``fanout``: a 'detailed' tile: ``fanout`` (default 8) lookup calls instead of 4 (the four
  cells and their neighbours), each carrying ``lookup_ms`` (default 25).
* ``self_call``: after ``self_call_delay_s`` (default 0.5) the request 'refines' its tile by
  calling ``geo_enrich`` (this model) through BLS, without the fault, and awaits it.
"""

import asyncio
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class _ChildError(Exception):
    pass


def _params(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _num(params, name, default, high):
    try:
        return min(max(float(params.get(name, default)), 0.0), high)
    except (TypeError, ValueError):
        return default


async def _lookup(request, key, parameters):
    try:
        response = await pb_utils.InferenceRequest(
            model_name="geo_lookup",
            requested_output_names=["ATTR"],
            inputs=[pb_utils.Tensor("KEY", np.array([key], dtype=np.int64))],
            trace=request.trace(),
            parameters=parameters,
        ).async_exec()
    except pb_utils.TritonModelException as err:
        raise _ChildError(f"geo_lookup: {err}") from err
    if response.has_error():
        raise _ChildError(f"geo_lookup: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, "ATTR").as_numpy()


async def _refine(request, grid, cells):
    response = await pb_utils.InferenceRequest(
        model_name="geo_enrich",
        requested_output_names=["POI"],
        inputs=[pb_utils.Tensor("GRID", grid), pb_utils.Tensor("CELLS", cells)],
        trace=request.trace(),
    ).async_exec()
    if response.has_error():
        raise _ChildError(f"geo_enrich: {response.error().message()}")
    return pb_utils.get_output_tensor_by_name(response, "POI").as_numpy()


class TritonPythonModel:
    async def _one(self, request):
        params = _params(request)
        fault = params.get("geo_fault", "")
        grid = pb_utils.get_input_tensor_by_name(request, "GRID").as_numpy()
        cells = pb_utils.get_input_tensor_by_name(request, "CELLS").as_numpy()
        keys = [int(k) for k in cells.reshape(-1)]
        calls = [{} for _ in keys]
        try:
            if fault == "self_call":
                await asyncio.sleep(_num(params, "self_call_delay_s", 0.5, 5.0))
                poi = await _refine(request, grid, cells)
                return pb_utils.InferenceResponse([pb_utils.Tensor("POI", poi.astype(np.float32))])
            if fault == "lookup_hang":
                calls[0] = {"hang_s": str(int(_num(params, "hang_s", 300, 600)))}
            elif fault == "fanout":
                n = int(_num(params, "fanout", 8, 64))
                keys = [keys[i % len(keys)] + (i // len(keys)) for i in range(n)]
                ms = str(int(_num(params, "lookup_ms", 25, 1000)))
                calls = [{"lookup_ms": ms} for _ in keys]
            rows = await asyncio.gather(
                *(_lookup(request, k, p) for k, p in zip(keys, calls, strict=True))
            )
        except _ChildError as err:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(f"geo_enrich: {err}"))
        poi = np.stack(rows).astype(np.float32)[np.newaxis]
        return pb_utils.InferenceResponse([pb_utils.Tensor("POI", poi)])

    async def execute(self, requests):
        return [await self._one(r) for r in requests]
