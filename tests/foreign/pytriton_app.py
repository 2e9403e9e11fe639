"""The ``pt`` family's server: three models served the way PyTriton users serve them.

    python -m tests.foreign.pytriton_app --http-port P --grpc-port G --metrics-port M \
        --log-file F [--log-verbose 1] [--fault NAME --arm-file PATH]

``pytriton.triton.Triton`` starts tritonserver (from the nvidia-pytriton wheel) as a child
process and binds each model as a python-backend proxy model that forwards every batch over
ZeroMQ to an ``infer_func`` running in *this* process:

* ``pt_embed``: ``@batch``, ``max_batch_size=8``, dynamic batching (2 ms), one instance;
  TOKENS ``[16]`` INT32 -> EMB ``[8]`` FP32, ~5 ms a batch.
* ``pt_rank``: two instances (a list of two infer_funcs), no batching; QUERY ``[16]`` INT32
  -> SCORES ``[4]`` FP32. Each instance calls ``pt_embed`` through its own
  ``pytriton.client.ModelClient`` over gRPC (a client-side chain: PyTriton has no BLS).
* ``pt_tag``: one instance, ``@batch``, ``max_batch_size=4``, dynamic batching; TEXT
  ``[8]`` INT32 -> TAGS ``[-1]`` INT32.

``--default-security`` keeps PyTriton's default ``TritonSecurityConfig`` (/v2/models/stats
answers 403 without the generated ``triton-access-token``); otherwise statistics are open.

``--fault`` (armed when ``--arm-file`` exists, so the recorder picks the moment):

* ``embed_hang``: the first ``pt_embed`` call after arming never returns.
* ``tag_raises``: every ``pt_tag`` call after arming raises ``KeyError``.
* ``embed_cold``: ``pt_embed``'s first call takes 4 s (a lazy set-up), then fast.
* ``tag_leak``: ``pt_tag`` appends what it emits to a kept list and answers the list, so
  TAGS doubles every call (8, 16, ... 131072: cut back to 8 once past 65536).

Stops on SIGTERM/SIGINT (``Triton.stop()`` stops tritonserver).
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
from pytriton.client import ModelClient
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

OPEN_STATS = ["shared-memory", "model-repository", "trace", "logging"]
"""PyTriton 0.7's default restricted endpoints less ``statistics``: by default it guards
/v2/models/stats with a generated token that no scraper knows."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--log-file", type=Path, required=True)
    parser.add_argument("--log-verbose", type=int, default=1)
    parser.add_argument("--fault", default="")
    parser.add_argument("--arm-file", type=Path, default=None)
    parser.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="PyTriton's workspace (must not exist); default: ~/.cache/pytriton/workspace_*",
    )
    parser.add_argument(
        "--default-security",
        action="store_true",
        help="keep PyTriton's default restricted endpoints (statistics needs a token)",
    )
    args = parser.parse_args()
    fault = args.fault

    def armed() -> bool:
        return args.arm_file is not None and args.arm_file.exists()

    lock = threading.Lock()
    state = {"embed_calls": 0, "hung": False, "kept": np.zeros(0, dtype=np.int32)}

    @batch
    def embed(TOKENS: np.ndarray) -> dict[str, np.ndarray]:
        with lock:
            state["embed_calls"] += 1
            first = state["embed_calls"] == 1
        if fault == "embed_cold" and first:
            time.sleep(4.0)  # loading a tokenizer and weights on first use
        if fault == "embed_hang" and armed() and not state["hung"]:
            state["hung"] = True
            threading.Event().wait()  # a lock never released: this call never returns
        time.sleep(0.005)
        emb = np.tanh(TOKENS[:, :8].astype(np.float32) / 1000.0)
        return {"EMB": emb}

    grpc_url = f"grpc://127.0.0.1:{args.grpc_port}"

    def make_rank(slot: int):
        client: list[ModelClient] = []

        def rank(requests):
            if not client:
                client.append(ModelClient(grpc_url, "pt_embed", init_timeout_s=30))
            out = []
            for req in requests:
                query = req["QUERY"].astype(np.int32)
                emb = client[0].infer_sample(TOKENS=query)["EMB"]
                scores = np.sort(emb[:4])[::-1].astype(np.float32) + slot * 0.0
                out.append({"SCORES": scores})
            return out

        return rank

    @batch
    def tag(TEXT: np.ndarray) -> dict[str, np.ndarray]:
        if fault == "tag_raises" and armed():
            raise KeyError(f"pt_tag: token {int(TEXT[0, 0]) + 4096} not in vocab.json")
        ids = (TEXT % 97).astype(np.int32)
        if fault == "tag_leak":
            with lock:
                kept = state["kept"]
                if kept.size > 65536:
                    kept = np.zeros(0, dtype=np.int32)
                kept = np.concatenate([kept, kept]) if kept.size else ids[0].copy()
                state["kept"] = kept
            return {"TAGS": np.tile(kept, (TEXT.shape[0], 1))}
        return {"TAGS": ids}

    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=args.http_port,
        grpc_address="127.0.0.1",
        grpc_port=args.grpc_port,
        metrics_address="127.0.0.1",
        metrics_port=args.metrics_port,
        log_file=args.log_file,
        log_verbose=args.log_verbose,
        exit_timeout_secs=5,
        allow_gpu_metrics=False,
    )
    security = (
        None if args.default_security else TritonSecurityConfig(restricted_endpoints=OPEN_STATS)
    )
    triton = Triton(config=config, workspace=args.workspace, security_config=security)
    triton.bind(
        model_name="pt_embed",
        infer_func=embed,
        inputs=[Tensor(name="TOKENS", dtype=np.int32, shape=(16,))],
        outputs=[Tensor(name="EMB", dtype=np.float32, shape=(8,))],
        config=ModelConfig(
            max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=2000)
        ),
    )
    triton.bind(
        model_name="pt_rank",
        infer_func=[make_rank(0), make_rank(1)],
        inputs=[Tensor(name="QUERY", dtype=np.int32, shape=(16,))],
        outputs=[Tensor(name="SCORES", dtype=np.float32, shape=(4,))],
        config=ModelConfig(batching=False),
    )
    triton.bind(
        model_name="pt_tag",
        infer_func=tag,
        inputs=[Tensor(name="TEXT", dtype=np.int32, shape=(8,))],
        outputs=[Tensor(name="TAGS", dtype=np.int32, shape=(-1,))],
        config=ModelConfig(
            max_batch_size=4, batcher=DynamicBatcher(max_queue_delay_microseconds=1000)
        ),
    )

    def _stop(*_: object) -> None:
        os._exit(_shutdown(triton))

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    triton.run()
    print("PT_READY", flush=True)
    while triton.is_alive():
        time.sleep(0.5)


def _shutdown(triton: Triton) -> int:
    done = threading.Thread(target=triton.stop, daemon=True)
    done.start()
    done.join(timeout=20)
    return 0


if __name__ == "__main__":
    main()
