"""FLOPs of a training step, counted from the matrix products (notebook 15 introduces them).

Per token, for a Llama-type layer: forward 2·h·(q + 2k) + 2·q·h (the projections) + 2·3·h·I per expert a token
visits (+ 2·h·E for the router) + 4·s·q (the scores and their product with the values, the whole s × s square), plus
2·h·V for the output layer; the backward twice the forward. That is also how MindSpore counts a step for its MFU
(mindspore.train.FlopsUtilizationCollector, which MindSpore Transformers' MFLossMonitor reads): MatMul and
BatchMatMul as 2·m·k·n, FlashAttentionScore as 4·b·s1·s2·h1 (the whole square, whatever its mask) and its gradient
as twice that (mindspore/ccsrc/frontend/parallel/graph_util/flops_collection.cc, CalFAFlops and GetBpNodeInfo).
Full recompute adds one more forward of the layers; selective recompute adds the scores' forward only where there is
a score matrix to recompute (flash=False: the attention core's products, as MindSpore Transformers recomputes them
without flash attention); with flash attention the recomputed SwiGLU operations are elementwise and add no product.
Norms, softmax, rotary and other elementwise work are not counted. Without a config: 6·N per token (N without the
embedding and output layer when --vocab is given, plus 6·h·V) and the attention term 12·layers·s·h per token.
"""

from __future__ import annotations

from helpers.hf_config import ModelShape
from helpers.planner.errors import PlanError
from helpers.planner.memory import recompute_mode


def step_flops(shape: ModelShape | None = None, *, params: float | None = None, layers: int | None = None,
               hidden: int | None = None, vocab: int | None = None, seq: int = 1, sequences: int = 1,
               recompute=False, flash: bool = True) -> dict:
    """FLOPs of one training step over `sequences` sequences of `seq` tokens (module docstring: what is counted):
    {"layer", "attention", "output"} forward FLOPs per token (one layer, its attention scores, the output layer),
    {"forward", "backward", "recompute", "total"} for the step, "model" = forward + backward (what MFU divides),
    "six_n" = 6·N·tokens and "attention_term" = 12·layers·s·h·tokens (the rule of thumb) beside them, "tokens".
    `flash`: the attention runs as one flash-attention kernel (no score matrix to recompute)."""
    mode = recompute_mode(recompute)
    tokens = seq * sequences
    if shape is not None:
        h, q, k, i = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim, shape.intermediate
        attention = 4 * seq * q
        projections = 2 * h * (q + 2 * k) + 2 * q * h
        mlp = shape.experts_per_token * 2 * 3 * h * i + (2 * h * shape.experts if shape.experts > 1 else 0)
        layer, output = projections + attention + mlp, 2 * h * shape.vocab
        layers, params, vocab = shape.layers, shape.parameters(), shape.vocab
    elif layers is not None and hidden is not None and params is not None:
        in_layers = params - (2 * vocab * hidden if vocab else 0)
        if in_layers <= 0:
            raise PlanError(f"--vocab: the embedding and output layer ({2 * vocab * hidden:,} parameters) are more "
                            f"than --params {int(params):,}")
        attention = 4 * seq * hidden
        layer, output = 2 * in_layers / layers + attention, 2 * hidden * vocab if vocab else 0
    elif params is not None:
        layers, attention, layer, output = 1, 0, 2 * params, 0
    else:
        raise PlanError("--params: FLOPs need the model: --config, or --params with --layers and --hidden")
    forward = tokens * (layers * layer + output)
    selective = 0 if flash else layers * attention
    extra = {"none": 0, "selective": selective, "full": layers * layer}[mode] * tokens
    out = {"layer": layer, "attention": attention, "output": output, "forward": forward, "backward": 2 * forward,
           "recompute": extra, "model": 3 * forward, "total": 3 * forward + extra, "tokens": tokens,
           "six_n": 6 * params * tokens, "attention_term": 12 * layers * seq * (hidden or 0) * tokens}
    if shape is not None:
        out["attention_term"] = 12 * layers * seq * shape.hidden * tokens
    return out
