"""Stream helpers of sum_router (a module next to its model.py, imported from there).

``chunks_future``: a future resolved from a done-callback on the sum_chunker call.
``lm_tokens``: sum_lm's decoupled stream read to its final flag (in a worker thread).
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def chunks_future(loop, chunker_task, layout):
    """The CHUNKS of the sum_chunker call, from a done-callback.

    ``layout="ragged"`` (a client option of the next chunker release) reads the chunk lengths
    from CHUNK_LENS, which today's sum_chunker does not return: ``get_output_tensor_by_name``
    answers None and the callback raises AttributeError. asyncio prints the exception and
    nobody ever resolves the future.
    """
    result = loop.create_future()

    def _on_chunks(task):
        response = task.result()
        if response.has_error():
            result.set_exception(RuntimeError(f"sum_chunker: {response.error().message()}"))
            return
        chunks = pb_utils.get_output_tensor_by_name(response, "CHUNKS").as_numpy()[0]
        if layout == "ragged":
            lens = pb_utils.get_output_tensor_by_name(response, "CHUNK_LENS").as_numpy()[0]
            chunks = [c[: int(n)] for c, n in zip(chunks, lens, strict=False)]
        result.set_result(chunks)

    chunker_task.add_done_callback(_on_chunks)
    return result


def lm_tokens(chunk, params, trace):
    """The SUMMARY_TOKENs of one chunk: sum_lm's stream iterated to its final flag."""
    request = pb_utils.InferenceRequest(
        model_name="sum_lm",
        requested_output_names=["SUMMARY_TOKEN"],
        inputs=[pb_utils.Tensor("CHUNK", np.ascontiguousarray(chunk, dtype=np.int32))],
        parameters=params,
        **trace,
    )
    tokens = []
    for response in request.exec(decoupled=True):  # blocks per response, ends at the flag
        if response.has_error():
            raise RuntimeError(f"sum_lm: {response.error().message()}")
        out = pb_utils.get_output_tensor_by_name(response, "SUMMARY_TOKEN")
        if out is not None:
            tokens.append(int(out.as_numpy().reshape(-1)[0]))
    return np.array(tokens, dtype=np.int32)
