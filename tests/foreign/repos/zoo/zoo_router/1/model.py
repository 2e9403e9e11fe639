"""zoo_router: route a text to one of four intent models (python BLS, one synchronous exec()
per request, children built without request ids); the child's error goes back to the caller
as this model's error response."""

import json

import triton_python_backend_utils as pb_utils

_CHILDREN = ("zoo_intent_en", "zoo_intent_de", "zoo_faq_match", "zoo_spell_fix")


def _child(request):
    try:
        params = json.loads(request.parameters() or "{}")
    except ValueError:
        params = {}
    child = params.get("zoo_child") if isinstance(params, dict) else None
    return child if child in _CHILDREN else _CHILDREN[0]


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            child = pb_utils.InferenceRequest(
                model_name=_child(request),
                requested_output_names=["Y"],
                inputs=[pb_utils.Tensor("X", x.as_numpy())],
            ).exec()
            if child.has_error():
                error = pb_utils.TritonError(f"intent lookup failed: {child.error().message()}")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            y = pb_utils.get_output_tensor_by_name(child, "Y")
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", y.as_numpy())]))
        return responses
