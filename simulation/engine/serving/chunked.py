"""Chunked prefill as vLLM and SGLang schedule it: one token budget per engine step.

Each forward pass (an engine *iteration*) carries every running sequence's next decode token
plus up to ``CHUNK_TOKENS`` prompt tokens taken first-come first-served from the prefills in
progress (a long prompt is cut into chunks over several iterations; several short prompts
share one). Decoding never stops for a prefill: an iteration with a chunk simply takes longer
(the weights are read once for both).

Cost of a request's prefill on top of the decode step, its *work* (seconds of replica time):

* per prompt token, the marginal cost of a full chunk,
  ``t_tok = (prefill(CHUNK_TOKENS) - prefill(1)) / (CHUNK_TOKENS - 1)`` — the GEMMs run at the
  efficiency of the whole chunk, the weight read and fixed costs are paid by the iteration;
* but never less than the prompt's own prefill minus one weight read per chunk it spans
  (``prefill(P) - ceil(P / CHUNK_TOKENS) x prefill(1)``), which keeps the quadratic attention
  of a long prompt (its later chunks attend to the earlier ones).

While a request's chunks run, the iterations also carry the decodes, so its prefill takes
``work + P / CHUNK_TOKENS x decode step`` of wall time and its first token comes with its last
chunk. Averaged over time a replica whose prefill work is a share ``u`` of its time decodes
at ``decode step / (1 - u)`` per token — the same mean stretch as stalling, spread evenly over
every sequence instead of in long pauses.

``CHUNK_TOKENS`` is the stacks' default budget on 80 GB-class parts: vLLM's
``max_num_batched_tokens`` for the OpenAI server on GPUs with >= 70 GiB other than A100
(``vllm/engine/arg_utils.py``, ``EngineArgs`` batch defaults: 8192; 2048 otherwise) and
SGLang's ``chunked_prefill_size`` for A100/H100/H200-class memory
(``python/sglang/srt/server_args.py``: 8192 below 160 GB, 2048 below 35 GB, 16384 above).
An operator setting, not fitted.
"""

from __future__ import annotations

import numpy as np

CHUNK_TOKENS = 8192


def chunk_constants(prefill_fn) -> tuple[np.ndarray, np.ndarray]:
    """(``t_tok``, ``w1``) from ``prefill_fn(tokens)`` evaluated at a full chunk and at 1 token.

    ``w1`` is a one-token pass (weight read and fixed costs: what an iteration pays anyway).
    """
    return constants_from(prefill_fn(float(CHUNK_TOKENS)), prefill_fn(1.0))


def constants_from(full, one) -> tuple[np.ndarray, np.ndarray]:
    """(``t_tok``, ``w1``) from the prefill times of a full chunk and of one token."""
    full, w1 = np.asarray(full, dtype=float), np.asarray(one, dtype=float)
    return np.maximum(full - w1, 0.0) / (CHUNK_TOKENS - 1), w1


def prefill_work(tokens, standalone, t_tok, w1) -> np.ndarray:
    """Replica seconds a prompt's chunks add to the iterations that carry them.

    ``standalone`` is the prompt's own prefill time (one pass of ``tokens`` tokens).
    """
    tokens = np.asarray(tokens, dtype=float)
    chunks = np.ceil(tokens / CHUNK_TOKENS)
    own = np.asarray(standalone, dtype=float) - chunks * w1
    return np.maximum(np.maximum(tokens * t_tok, own), 0.0)
