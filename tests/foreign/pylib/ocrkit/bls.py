"""BLS helpers shared by the OCR models: a future resolved from a done-callback."""

import asyncio

import numpy as np
import triton_python_backend_utils as pb_utils


def heatmap_future(loop, child_task, strict_shape):
    """A future resolved with the child's heatmap reshaped to the image, from a done-callback.

    The bug: ``strict_shape`` reshapes to the wrong size, which raises inside the callback;
    asyncio prints the exception and the future is never resolved.
    """
    result = loop.create_future()

    def _on_backbone_done(task):
        response = task.result()
        heat = pb_utils.get_output_tensor_by_name(response, "HEATMAP").as_numpy()
        shape = (32, 49) if strict_shape else (32, 48)
        result.set_result(np.reshape(heat, shape))

    child_task.add_done_callback(_on_backbone_done)
    return result


async def gather_with_timeout(future, timeout_s):
    return await asyncio.wait_for(future, timeout=timeout_s)
