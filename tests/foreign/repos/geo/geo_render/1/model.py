"""geo_render: rasterizes a tile with its points of interest (python, 2 instances).

GRID [B, 8, 8] and POI [B, n, 3] -> RASTER [B, 8, 8, 3] UINT8 and POIS [B, 1] INT32, about
300 ms per request (the raster work of the pipeline).

Fault: with ``GEO_RENDER_GLYPHS=missing`` in the server's environment (a build shipped
without its glyph atlas) execute raises RuntimeError on every request when it places the
labels, after the raster work (``GEO_RENDER_FAIL_EARLY=1``: at the top of execute instead, so
every request fails within milliseconds).
"""

import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.glyphs = os.environ.get("GEO_RENDER_GLYPHS", "bundled")
        self.fail_early = os.environ.get("GEO_RENDER_FAIL_EARLY") == "1"
        self.palette = np.array([[30, 90, 160], [240, 220, 120], [200, 60, 60]], np.float32)

    def execute(self, requests):
        if self.glyphs == "missing" and self.fail_early:
            self._labels()
        responses = []
        for request in requests:
            grid = pb_utils.get_input_tensor_by_name(request, "GRID").as_numpy()
            poi = pb_utils.get_input_tensor_by_name(request, "POI").as_numpy()
            weights = np.clip(poi.mean(axis=1) / np.array([1e4, 50, 30], np.float32), 0, 1)
            raster = grid[..., np.newaxis] * (weights @ self.palette)[:, np.newaxis, np.newaxis]
            raster = np.clip(raster, 0, 255).astype(np.uint8)
            pois = np.rint(poi[..., 2].sum(axis=1, keepdims=True)).astype(np.int32)
            responses.append(
                pb_utils.InferenceResponse(
                    [pb_utils.Tensor("RASTER", raster), pb_utils.Tensor("POIS", pois)]
                )
            )
        time.sleep(0.3)
        if self.glyphs == "missing":
            self._labels()
        return responses

    def _labels(self):
        raise RuntimeError("geo_render: glyph atlas 'noto-sans-regular.pbf' not found")
