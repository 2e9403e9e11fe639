"""vis_resize: HWC int pixels [B, 24, 40, 3] -> CHW float thumbnails [B, 3, 12, 20].

A 2x2 mean pool and a scale to [0, 1] (a few ms of numpy); its one output is the ensemble
tensor that fans out to both vis_classify and vis_embed.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            rgb = pb_utils.get_input_tensor_by_name(request, "RGB").as_numpy().astype(np.float32)
            b = rgb.shape[0]
            pooled = rgb.reshape(b, 12, 2, 20, 2, 3).mean(axis=(2, 4)) / 255.0
            thumb = np.ascontiguousarray(pooled.transpose(0, 3, 1, 2), dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("RESIZED", thumb)]))
        return responses
