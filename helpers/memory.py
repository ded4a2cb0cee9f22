"""Bytes per card and time per step for training a model: a planner, arithmetic only (notebook 09 introduces it;
notebook 15 adds the time).

Model states follow the ZeRO paper (Rajbhandari et al., 2020, "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", section 3 and Figure 1). For Ψ parameters on one card:

- parameters: 4Ψ bytes in float32, 2Ψ in fp16/bf16 mixed precision;
- gradients: the same as the parameters;
- optimizer state: K·Ψ bytes. float32: SGD K = 0, Momentum K = 4 (one slot), Adam K = 8 (two slots).
  Mixed precision adds the float32 master copy of the weights: K = 4, 8 and 12.

Tensor parallel (degree tp) and pipeline parallel (degree pp) split the parameters: each card holds
Ψ / (tp · pp) of them (an even split, rounded up). ZeRO stage s over the data-parallel degree dp then
shards: stage 1 the optimizer state, stage 2 the gradients too, stage 3 the parameters too. A shard
holds ceil(Ψ / dp) elements, as a flat buffer padded to a multiple of dp does.

Pipeline stages are not alike. When the planner knows the embedding (--config, or --vocab with --layers and
--hidden), the first stage holds the embedding (V·h) and its layers, the last stage the output layer (V·h, a copy
of the embedding when the two are tied), the final norm and its layers; the layers' parameters split evenly. A
plan is the busiest stage's: each stage is counted and the one with the most bytes per card is reported. Without
the embedding's size (--params alone) the model splits evenly, as above.

Activations (only when --layers and --hidden are given), for one micro-batch of `micro_batch` sequences
of `seq` tokens, with b = bytes per element (4 in float32, 2 in mixed precision):

- block "transformer": Korthikanti et al., 2022, "Reducing Activation Recomputation in Large Transformer
  Models", section 4. Their eq. (1) is a layer without parallelism, s·B·h·(34 + 5·a·s/h); eq. (2) tensor
  parallelism alone, s·B·h·(10 + 24/t + 5·a·s/(h·t)): the two norms' inputs, the dropout masks and the inputs of
  the first linear layers of attention and MLP (10) stay whole on every card. With sequence parallelism (the
  default, as notebook 11 builds it) they split too: eq. (1) divided by t = tp, s·B·h·(34 + 5·a·s/h) / tp bytes per
  layer (a = heads; without --heads the attention-score term is left out, as with flash attention), written for
  16-bit activations and doubled for float32. --no-sp plans eq. (2).
- block "llama" (the default with --config): a Llama-type layer (llama, mistral, qwen2, mixtral), counted the
  way Korthikanti et al. count, the inputs each operation keeps for its backward, in 16-bit bytes per token:
  attention 2h (norm input) + 2h (the q, k, v projections' input) + 2q (queries) + 4k (keys and values) + 2q
  (the output projection's input) + 2·a·s (softmax output; no dropout in these models), with q = heads·d and
  k = kv_heads·d; SwiGLU MLP 2h (norm input) + 2h (gate and up projections' input) + 8I (gate, up, silu(gate)
  and their product, I = intermediate_size). For Llama-2-7B (k = q = h, I = 2.6875h) that is 37.5·s·B·h per
  layer against GPT's 34. A mixture of experts replaces the MLP's 2h + 8I by 2E (the router's probabilities,
  E experts) + experts_per_token·(2h + 8I) (each token's copies and their experts' intermediates). Without
  sequence parallelism the norms' inputs, the projections' inputs, the router's probabilities and the tokens'
  copies stay whole on every card (8h + 2E + experts_per_token·2h); the rest splits by tp.
- block "mlp": notebook 09's residual block x + Dense(4h→h)(ReLU(Dense(h→4h)(x))). Kept per token and
  layer: its input (h) and the ReLU output (4h), b·5h bytes; while one layer runs backward, two more
  4h-wide buffers (its output gradient and its input gradient's product), b·8h per token. With recompute
  a layer keeps its input (b·h); the recomputed layer's 5h and the 8h working set come on top.

Recompute (Korthikanti et al., section 5): "full" keeps only each layer's input, 2·s·B·h bytes (divided by tp with
sequence parallelism) and one layer's full activations exist while it is recomputed; "selective" drops only the
attention-score term (5as/(ht), or the llama block's 2·a·s), recomputed from the kept queries and keys, one layer's
scores existing at a time. With flash attention (no --heads) there is no score term and selective saves nothing.

With a vocabulary (--vocab, or --config), one micro-batch's logits and loss sit on the last stage: the logits at
b bytes and a float32 copy for the softmax cross-entropy, s·B·V·(b + 4) / tp bytes (vocabulary-parallel output
layer); the embedding's output, b·s·B·h, sits on the first stage. With one stage both are on it.

Under a 1F1B pipeline schedule stage i holds min(pp − i, M) micro-batches in flight (M micro-batches a step): the
first stage holds min(pp, M), the last one, so pipeline parallelism does not shrink the first stage's activations
(Korthikanti et al., section 4.2.3). Under GPipe every stage holds all M. Gradient accumulation keeps one
micro-batch's activations per step in flight; its gradients sum into the gradient buffer counted above.

A step's time (step_time; needs --layers and --hidden, or --config). FLOPs per token, counted from the matrix
products of a Llama-type layer (step_flops): forward 2·h·(q + 2k) + 2·q·h (projections) + 2·3·h·I per expert a
token visits (+ 2·h·E for the router) + 4·s·q (scores and their product with the values, the whole s × s square as
Megatron-LM and PaLM count it; a causal kernel skips about half) per layer, plus 2·h·V for the output layer; the
backward twice the forward; full recompute one more forward of the layers, selective one more of the scores.
Norms, softmax, rotary and other elementwise work are not counted. Without --config: 6·N per token (N without the
embedding and output layer when --vocab is given, plus 6·h·V) and the attention term 12·layers·s·h per token
(12·layers·s²·h per sequence). Then, per micro-batch on the slowest stage (the last holds the output layer):
compute = FLOPs / tp ÷ (peak × efficiency); tensor parallelism's collectives (8 per layer, 12 with full recompute:
all-gathers and reduce-scatters of s·B·h·b with sequence parallelism, half as many all-reduces without) over the
tp group's link; expert parallelism's all-to-alls (4 per MoE layer, 6 with full recompute, of the tokens'
copies); a pipeline's two point-to-point messages. A ring collective over r cards of n bytes takes
(r − 1)·α + (r − 1)/r·n/β (an all-reduce twice that), α the link's latency and β its bandwidth. The pipeline
takes (M + pp − 1) such slots, so its idle share (the bubble) is (pp − 1)/(M + pp − 1) for 1F1B and GPipe.
Then the data-parallel reduction of the busiest stage's gradients, not overlapped: once per step for ZeRO 0 and
1; ZeRO-2 reduce-scatters every micro-batch's gradients (it keeps no whole gradient buffer) and ZeRO-3 also gathers
the weights for every micro-batch's forward and backward, as their memory plan assumes. Links: the ranks are
laid out dp × pp × tp with tp innermost (helpers.mesh), --node-cards per node; a group whose cards all sit in one
node uses the intra-node link, any other the inter-node one. Nothing overlaps; the optimizer's update, the data
loader and any imbalance between experts are not counted.

Assumptions, not measurements (each a flag): the peak (PEAK_FLOPS_ASSUMED: no Huawei document the planner could
cite gives the 910B's fp16 peak; 256 TFLOP/s is the figure Huawei announced for the Ascend 910 in 2019, used for
both), the efficiency (EFFICIENCY_ASSUMED, the share of the peak the matrix products reach) and the links (LINKS,
example values). Measure them (notebook 15: matmuls, hccl_test) and pass --peak-flops, --efficiency, --intra-bw,
--intra-latency, --inter-bw, --inter-latency.

    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --optimizer adam --precision bf16-mixed
    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --json
    python -m helpers.memory --config config.json --dp 8 --zero 1 --seq 4096 --card 910B
    python -m helpers.memory --config config.json --seq 4096 --card 910B --search --cards 8
    python -m helpers.memory --config config.json --seq 4096 --card 910B --search --cards 64 --global-batch 256 --json

--config reads a Hugging Face config.json (helpers.hf_config: llama, mistral, qwen2, mixtral) for the exact
parameter count, the layers, hidden size and vocabulary; its heads, key/value heads and MLP width limit tp and its
experts limit ep (add --heads for the attention-score term; left out, the planner assumes flash attention, as
Ascend jobs use), and its activations follow block "llama": grouped key/value heads, the SwiGLU width and the
experts per token. --card 910B | 910A | BYTES gives a verdict: it fits when the total is at most
90% of the card (64 GB or 32 GB, counted as 10^9 bytes: below the cards' 64 and 32 GiB), the rest left to
MindSpore's runtime, workspace, communication buffers and fragmentation. --search --cards N lists every layout
dp × tp × pp = N (each ZeRO stage, with and without recompute, each expert-parallel degree of a mixture of
experts) that fits, fastest estimated step first, all doing the same work: a global batch of --global-batch
sequences (default: N × --micro-batch × --accumulate, what N data-parallel cards with --accumulate micro-batches
would take), M = global batch / (dp × micro-batch) micro-batches per data-parallel rank.

GB here means 10^9 bytes, as in the ZeRO paper's figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, replace

from helpers.hf_config import ConfigError, ModelShape, read_config
from helpers.mesh import factorizations

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}     # float32 tensors the size of the weights
PRECISIONS = ("fp32", "fp16-mixed", "bf16-mixed")
BLOCKS = ("transformer", "llama", "mlp")
RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("1f1b", "gpipe")
GB = 1e9
CARDS = {"910B": 64 * GB, "910A": 32 * GB}          # HBM per card (Huawei: Atlas 800T A2's 910B; Atlas 300T's 910)
USABLE = 0.9                                       # the share of a card the planner lets a plan fill
COMPONENTS = ("params", "grads", "optimizer", "activations")
# Assumptions for a step's time, each overridable (module docstring): not measured, not from a spec sheet.
PEAK_FLOPS_ASSUMED = 256e12        # FLOP/s per card, fp16: Huawei's 2019 figure for the Ascend 910, used for 910B too
EFFICIENCY_ASSUMED = 0.5           # the share of the peak a step's matrix products reach
NODE_CARDS = 8                     # cards per node: an Atlas 800T A2 server holds 8
LINKS = {"intra": (10e-6, 100e9),  # example (latency s, bandwidth bytes/s) inside a node (HCCS), per card
         "inter": (20e-6, 25e9)}   # example between nodes, per card: a 200 Gb/s port's worth


class PlanError(ValueError):
    """Bad input; the message starts with the flag it names."""


def element_bytes(precision: str) -> int:
    """Bytes of one weight, gradient or activation: 2 in fp16/bf16 mixed precision, 4 in float32."""
    return 2 if precision != "fp32" else 4


def bytes_per_param(optimizer: str, precision: str) -> dict[str, int]:
    """Bytes per parameter for the weights, the gradients and the optimizer state (ZeRO's 2 + 2 + K)."""
    if optimizer not in OPTIMIZER_SLOTS:
        raise PlanError(f"--optimizer: unknown value {optimizer!r} (choose from {', '.join(OPTIMIZER_SLOTS)})")
    if precision not in PRECISIONS:
        raise PlanError(f"--precision: unknown value {precision!r} (choose from {', '.join(PRECISIONS)})")
    weight, master_copy = element_bytes(precision), 4 if precision != "fp32" else 0
    return {"params": weight, "grads": weight, "optimizer": 4 * OPTIMIZER_SLOTS[optimizer] + master_copy}


def recompute_mode(recompute) -> str:
    """"none", "selective" or "full" from a recompute argument (False, True, or one of those names)."""
    if recompute is None or recompute is False:
        return "none"
    if recompute is True:
        return "full"
    if recompute in RECOMPUTE:
        return recompute
    raise PlanError(f"--recompute: unknown value {recompute!r} (choose from {', '.join(RECOMPUTE)})")


def _stages(pp: int) -> tuple[str, ...]:
    """The stages that can be the busiest: the only one, or the first and the last (a middle stage holds fewer
    micro-batches in flight than the first and neither the embedding nor the output layer)."""
    return ("only",) if pp == 1 else ("first", "last")


def _in_flight(stage: str, pp: int, accumulate: int, schedule: str) -> int:
    if schedule == "gpipe" and pp > 1:
        return accumulate
    return {"only": 1, "first": min(pp, accumulate), "last": 1}[stage]


def _stage_activations(stage: str, *, layers: int, hidden: int, seq: int, micro_batch: int, heads: int | None,
                       tp: int, pp: int, accumulate: int, recompute: str, precision: str, block: str,
                       vocab: int | None, shape: ModelShape | None, sequence_parallel: bool, schedule: str) -> int:
    element = element_bytes(precision)
    tokens = seq * micro_batch
    layers_here = layers // pp
    split = sequence_parallel or tp == 1
    if block in ("transformer", "llama"):   # 16-bit bytes per token, and per attention-score entry
        per_token, per_score = (34 * hidden, 5) if block == "transformer" else (llama_layer_units(shape), 2)
        whole = 0 if split else (10 * hidden if block == "transformer" else _llama_unsplit_units(shape))
        scores = per_score * heads * seq * tokens if heads else 0
        if split:
            full = (tokens * per_token + scores) * element // 2 // tp
        else:
            full = (tokens * whole + tokens * (per_token - whole) // tp + scores // tp) * element // 2
        score_bytes = scores * element // 2 // tp
        if recompute == "full":
            kept, working = element * tokens * hidden // (tp if split else 1), full
        elif recompute == "selective":
            kept, working = full - score_bytes, score_bytes
        else:
            kept, working = full, 0
    else:
        full_recompute = recompute == "full"
        kept = element * tokens * hidden * (1 if full_recompute else 5)
        working = element * tokens * hidden * (8 + (5 if full_recompute else 0))
    ends = 0
    if vocab and stage in ("only", "first"):
        ends += element * tokens * hidden                       # the embedding's output
    if vocab and stage in ("only", "last"):
        ends += tokens * vocab * (element + 4) // tp            # logits and the float32 loss
    return _in_flight(stage, pp, accumulate, schedule) * layers_here * kept + working + ends


def activation_bytes(*, layers: int, hidden: int, seq: int = 1, micro_batch: int = 1, heads: int | None = None,
                     tp: int = 1, pp: int = 1, accumulate: int = 1, recompute=False,
                     precision: str = "bf16-mixed", block: str = "transformer", vocab: int | None = None,
                     shape: ModelShape | None = None, sequence_parallel: bool = True,
                     schedule: str = "1f1b") -> int:
    """Activation bytes per card for one training step on the stage that holds the most (formulas in the module
    docstring). Block "llama" takes the layer's widths from `shape` (helpers.hf_config.read_config). `recompute`:
    False, True (full), "none", "selective" or "full"."""
    if block not in BLOCKS:
        raise PlanError(f"--block: unknown value {block!r} (choose from {', '.join(BLOCKS)})")
    if block == "llama" and shape is None:
        raise PlanError("--block: llama needs the model's config.json (--config), for its widths")
    if schedule not in SCHEDULES:
        raise PlanError(f"--schedule: unknown value {schedule!r} (choose from {', '.join(SCHEDULES)})")
    mode = recompute_mode(recompute)
    return max(_stage_activations(stage, layers=layers, hidden=hidden, seq=seq, micro_batch=micro_batch, heads=heads,
                                  tp=tp, pp=pp, accumulate=accumulate, recompute=mode, precision=precision,
                                  block=block, vocab=vocab, shape=shape, sequence_parallel=sequence_parallel,
                                  schedule=schedule)
               for stage in _stages(pp))


def llama_layer_units(shape: ModelShape) -> int:
    """16-bit bytes one token keeps for the backward pass in one Llama-type layer, without the attention scores
    (block "llama" in the module docstring)."""
    h, q, k = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = 2 * h + 2 * h + 2 * q + 4 * k + 2 * q
    expert = 2 * h + 8 * shape.intermediate
    mlp = 2 * h + (expert if shape.experts == 1 else 2 * shape.experts + shape.experts_per_token * expert)
    return attention + mlp


def _llama_unsplit_units(shape: ModelShape) -> int:
    """The part of llama_layer_units that tensor parallelism without sequence parallelism keeps whole on every
    card: the two norms' inputs, the inputs of the q, k, v and of the gate and up projections, and for a mixture of
    experts the router's probabilities and the tokens' copies."""
    h = shape.hidden
    moe = 0 if shape.experts == 1 else 2 * shape.experts + shape.experts_per_token * 2 * h - 2 * h
    return 8 * h + moe


def communication_bytes(params: float, *, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0,
                        precision: str = "bf16-mixed", layers: int | None = None, hidden: int | None = None,
                        seq: int = 1, micro_batch: int = 1, accumulate: int = 1, recompute: bool = False) -> dict:
    """Bytes one card sends per training step, by ring collectives, for {"dp", "tp", "pp", "total"}.

    dp: the gradients' all-reduce (or ZeRO's reduce-scatter plus all-gather), 2·(dp−1)/dp of the card's share
    of the weights; ZeRO-3 gathers the weights twice, 3·(dp−1)/dp (ZeRO paper, section 7.2). tp: with sequence
    parallelism two all-gathers and two reduce-scatters of s·B·h per layer forward, the same backward (without
    it, two all-reduces each way: the same bytes), 8·(tp−1)/tp·s·B·h·b per layer and micro-batch, 12 with
    recompute (the forward runs twice). pp: a middle stage sends one activation and one gradient of s·B·h/tp per
    micro-batch, a first or last stage one of them (so each of two stages sends one). Without --layers and
    --hidden only the dp term is counted. `recompute` here is full recompute (selective sends nothing more)."""
    element = element_bytes(precision)
    here = math.ceil(int(params) / (tp * pp))
    sent = {"dp": (3 if zero >= 3 else 2) * (dp - 1) * here * element // dp, "tp": 0, "pp": 0}
    if layers is not None and hidden is not None:
        tokens = seq * micro_batch
        sent["tp"] = (12 if recompute else 8) * (tp - 1) * tokens * hidden * element * (layers // pp) // tp * accumulate
        sent["pp"] = min(2, pp - 1) * tokens * hidden * element // tp * accumulate
    sent["total"] = sum(sent.values())
    return sent


# MindSpore's own sharding levels, AutoParallel.hsdp(optimizer_level=...): what each shards over the data-parallel
# ranks, from its 2.10 docstring. level1 is not ZeRO-1: it shards the weights too, and leaves the gradients whole.
OPTIMIZER_LEVELS = {"level1": {"params", "optimizer"}, "level2": {"params", "optimizer", "grads"},
                    "level3": {"params", "optimizer", "grads"}}   # level3: gathered again before the backward


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def _check(params, *, dp, tp, pp, zero, optimizer_level, layers, hidden, seq, micro_batch, heads, accumulate, vocab,
           ep, expert_params, shape, block, schedule) -> None:
    """Every PlanError a plan can raise, before any arithmetic."""
    counts = {"--params": params, "--dp": dp, "--tp": tp, "--pp": pp, "--seq": seq, "--micro-batch": micro_batch,
              "--accumulate": accumulate, "--layers": layers, "--hidden": hidden, "--heads": heads, "--vocab": vocab,
              "--ep": ep}
    for flag, value in counts.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise PlanError(f"{flag}: must be a number, got {value!r} ({type(value).__name__})")
        if value is not None and not (value > 0 and float(value).is_integer()):
            raise PlanError(f"{flag}: must be a positive whole number, got {value!r}")
    if zero not in (0, 1, 2, 3):
        raise PlanError(f"--zero: must be 0, 1, 2 or 3, got {zero!r}")
    if optimizer_level is not None and optimizer_level not in OPTIMIZER_LEVELS:
        raise PlanError(f"--optimizer-level: must be level1, level2 or level3, got {optimizer_level!r}")
    if optimizer_level is not None and zero:
        raise PlanError("--optimizer-level: give it or --zero, not both (they name two ways of sharding)")
    if schedule not in SCHEDULES:
        raise PlanError(f"--schedule: unknown value {schedule!r} (choose from {', '.join(SCHEDULES)})")
    if (layers is None) != (hidden is None):
        raise PlanError("--layers: give --layers and --hidden together (or neither: no activations)")
    if layers is not None and layers % pp:
        raise PlanError(f"--pp: {pp} does not divide --layers {layers}")
    if hidden is not None and hidden % tp:
        raise PlanError(f"--tp: {tp} does not divide --hidden {hidden}")
    if heads is not None and heads % tp:
        raise PlanError(f"--tp: {tp} does not divide --heads {heads}")
    if shape is not None:
        allowed = _divisors(math.gcd(shape.heads, shape.kv_heads, shape.intermediate, shape.hidden))
        for count, name in ((shape.heads, "attention heads (num_attention_heads)"),
                            (shape.kv_heads, "key/value heads (num_key_value_heads)"),
                            (shape.intermediate, "MLP width (intermediate_size)")):
            if count % tp:
                raise PlanError(f"--tp: {tp} does not divide the model's {count} {name}; tensor parallelism splits "
                                f"them, so choose --tp from {allowed}")
    if ep is not None and (dp * tp) % ep:
        raise PlanError(f"--ep: {ep} does not divide dp x tp = {dp * tp} (the expert-parallel ranks are carved "
                        "out of the data- and tensor-parallel ones)")
    if ep is not None and shape is not None and shape.experts % ep:
        raise PlanError(f"--ep: {ep} does not divide the model's {shape.experts} experts (num_local_experts): "
                        "each expert-parallel rank holds a whole number of them; choose --ep from "
                        f"{_divisors(shape.experts)}")
    if ep is not None and not 0 < expert_params <= params:
        raise PlanError("--ep: needs the experts' share of the parameters (--config of a mixtral model)")


def _stage_parameters(params: float, *, tp: int, pp: int, layers: int | None, hidden: int | None,
                      vocab: int | None, shape: ModelShape | None, experts: int, ep: int | None) -> dict:
    """{stage: (parameters on one card outside the experts, expert parameters on one card)} for the stages that
    can be the busiest (module docstring: the embedding on the first stage, the output layer on the last)."""
    mine = math.ceil(experts / (ep * pp)) if experts else 0
    if shape is not None:                      # the config says where the embedding and output layer are
        vocab, hidden, layers = shape.vocab, shape.hidden, shape.layers
    if pp == 1 or not (vocab and hidden and layers):
        return {stage: (math.ceil((int(params) - experts) / (tp * pp)), mine) for stage in _stages(pp)}
    embedding = vocab * hidden
    tied = shape.tied_embeddings if shape is not None else False
    final_norm = hidden if shape is not None else 0
    in_layers = int(params) - experts - embedding * (1 if tied else 2) - final_norm
    if in_layers < 0:
        raise PlanError(f"--vocab: the embedding and output layer ({2 * embedding:,} parameters) are more than "
                        f"--params {int(params):,}")
    per_stage = math.ceil(in_layers / pp)
    return {"first": (math.ceil((embedding + per_stage) / tp), mine),
            "last": (math.ceil((embedding + per_stage + final_norm) / tp), mine)}


def plan_stages(params: float, *, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, optimizer: str = "adam",
                precision: str = "bf16-mixed", layers: int | None = None, hidden: int | None = None, seq: int = 1,
                micro_batch: int = 1, heads: int | None = None, accumulate: int = 1, recompute=False,
                block: str = "transformer", optimizer_level: str | None = None, vocab: int | None = None,
                ep: int | None = None, expert_params: float = 0, shape: ModelShape | None = None,
                sequence_parallel: bool = True, schedule: str = "1f1b") -> dict[str, dict[str, int]]:
    """plan() for each stage that can be the busiest: {"only": {...}} without a pipeline, else {"first": {...},
    "last": {...}}, each {"params", "grads", "optimizer", "activations", "total"}."""
    _check(params, dp=dp, tp=tp, pp=pp, zero=zero, optimizer_level=optimizer_level, layers=layers, hidden=hidden,
           seq=seq, micro_batch=micro_batch, heads=heads, accumulate=accumulate, vocab=vocab, ep=ep,
           expert_params=expert_params, shape=shape, block=block, schedule=schedule)
    per_param = bytes_per_param(optimizer, precision)
    mode = recompute_mode(recompute)
    experts = int(expert_params) if ep is not None else 0
    sharded = {"params": zero >= 3, "grads": zero >= 2, "optimizer": zero >= 1}
    if optimizer_level is not None:
        sharded = {name: name in OPTIMIZER_LEVELS[optimizer_level] for name in sharded}
    out = {}
    shares = _stage_parameters(params, tp=tp, pp=pp, layers=layers, hidden=hidden, vocab=vocab, shape=shape,
                               experts=experts, ep=ep)
    for stage, (dense, mine) in shares.items():
        here = dense + mine
        shard = math.ceil(dense / dp) + (math.ceil(mine / (dp * tp // ep)) if experts else 0)   # of a ZeRO buffer
        parts = {name: per_param[name] * (shard if sharded[name] else here) for name in per_param}
        if layers is None:
            parts["activations"] = 0
        else:
            if block not in BLOCKS:
                raise PlanError(f"--block: unknown value {block!r} (choose from {', '.join(BLOCKS)})")
            if block == "llama" and shape is None:
                raise PlanError("--block: llama needs the model's config.json (--config), for its widths")
            parts["activations"] = _stage_activations(
                stage, layers=layers, hidden=hidden, seq=seq, micro_batch=micro_batch, heads=heads, tp=tp, pp=pp,
                accumulate=accumulate, recompute=mode, precision=precision, block=block, vocab=vocab, shape=shape,
                sequence_parallel=sequence_parallel, schedule=schedule)
        parts["total"] = sum(parts[name] for name in COMPONENTS)
        out[stage] = parts
    return out


def plan(params: float, *, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, optimizer: str = "adam",
         precision: str = "bf16-mixed", layers: int | None = None, hidden: int | None = None, seq: int = 1,
         micro_batch: int = 1, heads: int | None = None, accumulate: int = 1, recompute=False,
         block: str = "transformer", optimizer_level: str | None = None, vocab: int | None = None,
         ep: int | None = None, expert_params: float = 0, shape: ModelShape | None = None,
         sequence_parallel: bool = True, schedule: str = "1f1b") -> dict[str, int]:
    """Bytes per card on the busiest pipeline stage: {"params", "grads", "optimizer", "activations", "total"}
    (integers). `zero` is the ZeRO stage; `optimizer_level` instead plans MindSpore's hsdp level ("level1",
    "level2", "level3"). `recompute`: False, True (full), "none", "selective" or "full". With `ep`, the
    `expert_params` of a mixture of experts are split over ep expert-parallel ranks (and the stages), not by tp;
    the ep ranks are carved out of the dp x tp ones, and ZeRO shards the experts over the dp x tp / ep ranks that
    hold the same experts (notebook 13). With `shape` (a config.json) tp must divide its heads, key/value heads and
    MLP width, and ep its experts. `sequence_parallel=False` plans tensor parallelism without sequence parallelism;
    `schedule` is the pipeline's, "1f1b" or "gpipe"."""
    stages = plan_stages(params, dp=dp, tp=tp, pp=pp, zero=zero, optimizer=optimizer, precision=precision,
                         layers=layers, hidden=hidden, seq=seq, micro_batch=micro_batch, heads=heads,
                         accumulate=accumulate, recompute=recompute, block=block, optimizer_level=optimizer_level,
                         vocab=vocab, ep=ep, expert_params=expert_params, shape=shape,
                         sequence_parallel=sequence_parallel, schedule=schedule)
    return max(stages.values(), key=lambda parts: parts["total"])


def card_bytes(card: str) -> float:
    """910B, 910A, or a size in bytes (7.2e10)."""
    if card in CARDS:
        return CARDS[card]
    try:
        size = float(card)
    except ValueError:
        raise PlanError(f"--card: {card!r} is not 910B, 910A or a size in bytes") from None
    if not math.isfinite(size) or size <= 0:
        raise PlanError(f"--card: must be a finite positive size in bytes (or 910B, 910A), got {card!r}")
    return size


def verdict(total: float, card: str, parts: dict | None = None) -> tuple[bool, str]:
    """Whether `total` bytes fit on `card`, and one sentence saying by how much and why. With `parts` (a plan) the
    advice for a plan that does not fit follows what overflows: the model states or the activations."""
    size = card_bytes(card)
    allowed = USABLE * size
    name = f"a {card} ({size / GB:.0f} GB)" if card in CARDS else f"a card of {size / GB:.1f} GB"
    if total <= allowed:
        return True, (f"fits on {name}: {total / GB:.1f} GB planned, {(allowed - total) / GB:.1f} GB to spare inside "
                      f"the {allowed / GB:.1f} GB the planner allows (the last {1 - USABLE:.0%} is left to MindSpore's "
                      "runtime, workspace, communication buffers and fragmentation)")
    over = (f"does not fit on {name}: {total / GB:.1f} GB planned, {(total - allowed) / GB:.1f} GB over the "
            f"{allowed / GB:.1f} GB the planner allows: ")
    if parts is None:
        return False, over + "shard further (--zero, --tp, --pp), --recompute, or more cards (--search --cards N)"
    states = parts["params"] + parts["grads"] + parts["optimizer"]
    if states > allowed:
        return False, over + (f"the model states alone take {states / GB:.1f} GB, so shard them: --zero 3 (or a "
                              "higher stage), --tp or --pp, or more cards (--search --cards N); --recompute, --seq "
                              "and --micro-batch change only the activations")
    return False, over + (f"the model states take {states / GB:.1f} GB and the activations "
                          f"{parts['activations'] / GB:.1f} GB: --recompute (full or selective), --tp with sequence "
                          "parallelism, a smaller --micro-batch or a shorter --seq, or --search --cards N")


@dataclass(frozen=True)
class Machine:
    """What a step's time depends on besides the model: a card's peak FLOP/s, the share of it a step reaches, the
    cards per node and each link's latency (s) and bandwidth (bytes/s, per card, as a ring collective sees it).
    The defaults are assumptions (module docstring); `assumed` names the fields nobody set."""
    peak_flops: float = PEAK_FLOPS_ASSUMED
    efficiency: float = EFFICIENCY_ASSUMED
    node_cards: int = NODE_CARDS
    intra_latency: float = LINKS["intra"][0]
    intra_bandwidth: float = LINKS["intra"][1]
    inter_latency: float = LINKS["inter"][0]
    inter_bandwidth: float = LINKS["inter"][1]
    assumed: tuple = ("peak_flops", "efficiency", "intra_latency", "intra_bandwidth", "inter_latency",
                      "inter_bandwidth")


MACHINE_FLAGS = {"peak_flops": "--peak-flops", "efficiency": "--efficiency", "node_cards": "--node-cards",
                 "intra_latency": "--intra-latency", "intra_bandwidth": "--intra-bw",
                 "inter_latency": "--inter-latency", "inter_bandwidth": "--inter-bw"}


def machine(**given) -> Machine:
    """A Machine with the given fields (None: the default), each checked; the rest stay assumed."""
    given = {k: v for k, v in given.items() if v is not None}
    for name, value in given.items():
        flag = MACHINE_FLAGS.get(name)
        if flag is None:
            raise PlanError(f"machine: unknown field {name!r} (choose from {', '.join(MACHINE_FLAGS)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise PlanError(f"{flag}: must be a finite number, got {value!r}")
        if name.endswith("latency") and value < 0:
            raise PlanError(f"{flag}: must be 0 or more seconds, got {value!r}")
        if not name.endswith("latency") and value <= 0:
            raise PlanError(f"{flag}: must be positive, got {value!r}")
    if given.get("efficiency", 0) > 1:
        raise PlanError(f"--efficiency: the share of the peak reached, at most 1, got {given['efficiency']!r}")
    if "node_cards" in given and not float(given["node_cards"]).is_integer():
        raise PlanError(f"--node-cards: must be a whole number, got {given['node_cards']!r}")
    if "node_cards" in given:
        given["node_cards"] = int(given["node_cards"])
    base = Machine()
    return replace(base, **given, assumed=tuple(name for name in base.assumed if name not in given))


def step_flops(shape: ModelShape | None = None, *, params: float | None = None, layers: int | None = None,
               hidden: int | None = None, vocab: int | None = None, seq: int = 1, sequences: int = 1,
               recompute=False) -> dict:
    """FLOPs of one training step over `sequences` sequences of `seq` tokens (module docstring: what is counted):
    {"layer", "attention", "output"} forward FLOPs per token (one layer, its attention scores, the output layer),
    {"forward", "backward", "recompute", "total"} for the step, "model" = forward + backward (what MFU divides),
    "six_n" = 6·N·tokens and "attention_term" = 12·layers·s·h·tokens (the rule of thumb) beside them, "tokens"."""
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
    extra = {"none": 0, "selective": layers * attention, "full": layers * layer}[mode] * tokens
    out = {"layer": layer, "attention": attention, "output": output, "forward": forward, "backward": 2 * forward,
           "recompute": extra, "model": 3 * forward, "total": 3 * forward + extra, "tokens": tokens,
           "six_n": 6 * params * tokens, "attention_term": 12 * layers * seq * (hidden or 0) * tokens}
    if shape is not None:
        out["attention_term"] = 12 * layers * seq * shape.hidden * tokens
    return out


def _dp_halves(zero: int, accumulate: int) -> int:
    """Halves of an all-reduce (each a reduce-scatter or an all-gather of the card's share of the weights) the
    data-parallel group runs per step: the gradients' all-reduce once per step (ZeRO 0 and 1: reduce-scatter, update
    the shard, all-gather); ZeRO-2 reduce-scatters each micro-batch's gradients into its shard (it keeps no whole
    gradient buffer) and gathers the weights once; ZeRO-3 also gathers the weights for each micro-batch's forward
    and backward. With one micro-batch these are communication_bytes' 2, 2, 2 and 3."""
    return {0: 2, 1: 2, 2: accumulate + 1, 3: 3 * accumulate}[zero]


def _ring(kind: str, ranks: int, nbytes: float, link: tuple[float, float]) -> float:
    """Seconds for one ring collective over `ranks` cards of an `nbytes` tensor (the whole tensor, or for an
    all-to-all the bytes one card holds); `link` is (latency, bandwidth)."""
    if ranks <= 1:
        return 0.0
    latency, bandwidth = link
    one = (ranks - 1) * latency + (ranks - 1) / ranks * nbytes / bandwidth
    return {"all_gather": one, "reduce_scatter": one, "all_to_all": one, "all_reduce": 2 * one}[kind]


def links(cards: int, *, tp: int = 1, pp: int = 1, ep: int | None = None, node_cards: int = NODE_CARDS) -> dict:
    """Which link each group crosses, "intra" or "inter" (None without a group), for ranks laid out dp × pp × tp
    with tp innermost: a group stays in one node when every block of ranks it spans fits a node, block tp for tp,
    tp·pp for pp, all the cards for dp. The ep group takes ep consecutive ranks of the dp × tp plane."""
    def where(block: int) -> str:
        return "intra" if node_cards % block == 0 else "inter"

    dp = cards // (tp * pp)
    out = {"tp": where(tp) if tp > 1 else None, "pp": where(tp * pp) if pp > 1 else None,
           "dp": where(cards) if dp > 1 else None, "ep": None}
    if ep is not None and ep > 1:
        if tp % ep == 0:
            out["ep"] = where(ep)
        elif ep % tp == 0:
            out["ep"] = where(ep * pp if ep > tp else tp)
        else:
            out["ep"] = where(cards)
    return out


def step_time(params: float, *, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, precision: str = "bf16-mixed",
              layers: int | None = None, hidden: int | None = None, seq: int = 1, micro_batch: int = 1,
              accumulate: int = 1, recompute=False, heads: int | None = None, vocab: int | None = None,
              shape: ModelShape | None = None, ep: int | None = None, expert_params: float = 0,
              sequence_parallel: bool = True, machine: Machine | None = None, optimizer_level: str | None = None,
              schedule: str = "1f1b") -> dict:
    """A step's estimated time for one layout (module docstring: the model). `accumulate` is M, the micro-batches
    per data-parallel rank and step. Returns {"step_seconds", "seconds": {"compute", "recompute", "tp", "ep", "pp",
    "bubble", "dp"} (they sum to step_seconds, for the slowest stage), "bubble": the pipeline's idle share,
    "micro_batches", "sequences" and "tokens" per step, "flops" (the model's, without recompute),
    "tokens_per_second_per_card", "mfu" (model FLOPs / (step × cards × peak)), "links", "sent" (bytes per card and
    step: communication_bytes' "tp" and "pp", its "dp" but ZeRO-2 and -3 per micro-batch (_dp_halves), and "ep")}.
    Nothing overlaps: the collectives wait for the compute, and the compute for them. With `shape` the layers,
    hidden size and vocabulary default to the config's."""
    if shape is not None:
        layers, hidden, vocab = layers or shape.layers, hidden or shape.hidden, vocab or shape.vocab
    _check(params, dp=dp, tp=tp, pp=pp, zero=zero, optimizer_level=optimizer_level, layers=layers, hidden=hidden,
           seq=seq, micro_batch=micro_batch, heads=heads, accumulate=accumulate, vocab=vocab, ep=ep,
           expert_params=expert_params, shape=shape, block="transformer", schedule=schedule)
    hw = machine or Machine()
    mode = recompute_mode(recompute)
    element = element_bytes(precision)
    cards = dp * tp * pp
    where = links(cards, tp=tp, pp=pp, ep=ep, node_cards=hw.node_cards)
    link = {"intra": (hw.intra_latency, hw.intra_bandwidth), "inter": (hw.inter_latency, hw.inter_bandwidth),
            None: (0.0, 1.0)}
    tokens_mb = seq * micro_batch
    per_mb = step_flops(shape, params=params, layers=layers, hidden=hidden, vocab=vocab, seq=seq,
                        sequences=micro_batch, recompute=mode)
    rate = hw.peak_flops * hw.efficiency
    n_layers = layers if layers is not None else 1          # without --layers: the model as one block
    layers_here = n_layers // pp if layers is not None else 1 / pp
    # Forward FLOPs per micro-batch on one card of the first and the last stage (the last adds the output layer).
    stage_forward = {stage: tokens_mb * (layers_here * per_mb["layer"] + (per_mb["output"] if stage != "first" else 0))
                     / tp for stage in _stages(pp)}
    extra_per_layer = per_mb["recompute"] / n_layers / tp
    slot = {}
    for stage, forward in stage_forward.items():
        parts = {"compute": 3 * forward / rate, "recompute": layers_here * extra_per_layer / rate,
                 "tp": 0.0, "ep": 0.0, "pp": 0.0}
        if tp > 1 and layers is not None:
            nbytes = tokens_mb * hidden * element
            count = 12 if mode == "full" else 8
            if sequence_parallel:
                parts["tp"] = layers_here * count * _ring("all_gather", tp, nbytes, link[where["tp"]])
            else:
                parts["tp"] = layers_here * count // 2 * _ring("all_reduce", tp, nbytes, link[where["tp"]])
        if ep is not None and ep > 1 and shape is not None and shape.experts > 1:
            held = tokens_mb // (tp if sequence_parallel else 1) * shape.experts_per_token * shape.hidden * element
            parts["ep"] = layers_here * (6 if mode == "full" else 4) * _ring("all_to_all", ep, held, link[where["ep"]])
        if pp > 1 and layers is not None:
            latency, bandwidth = link[where["pp"]]
            parts["pp"] = min(2, pp - 1) * (latency + tokens_mb * hidden * element / tp / bandwidth)
        slot[stage] = parts
    slowest = max(slot, key=lambda stage: sum(slot[stage].values()))
    per_slot = sum(slot[slowest].values())
    seconds = {name: accumulate * value for name, value in slot[slowest].items()}
    seconds["bubble"] = (pp - 1) * per_slot
    # The data-parallel reduction of each stage's gradients, in halves of an all-reduce (_dp_halves), the experts'
    # over the dp x tp / ep cards that hold the same experts; the stage that takes longest counts.
    experts = int(expert_params) if ep is not None else 0
    shares = _stage_parameters(params, tp=tp, pp=pp, layers=layers, hidden=hidden, vocab=vocab, shape=shape,
                               experts=experts, ep=ep)
    halves = _dp_halves(zero if optimizer_level is None else int(optimizer_level[-1]), accumulate)
    replicas = dp * tp // ep if experts else 1
    expert_link = link[where["dp"] if dp > 1 else where["tp"]]
    seconds["dp"] = max(halves * _ring("all_gather", dp, dense * element, link[where["dp"]])
                        + halves * _ring("all_gather", replicas, mine * element, expert_link)
                        for dense, mine in shares.values())
    step = sum(seconds.values())
    sequences = dp * micro_batch * accumulate
    model_flops = per_mb["model"] * dp * accumulate
    sent = communication_bytes(params, dp=dp, tp=tp, pp=pp, zero=zero, precision=precision, layers=layers,
                               hidden=hidden, seq=seq, micro_batch=micro_batch, accumulate=accumulate,
                               recompute=mode == "full")
    dense, mine = max(shares.values())
    sent["dp"] = halves * ((dp - 1) * dense * element // dp + ((replicas - 1) * mine * element // replicas))
    sent["total"] = sent["dp"] + sent["tp"] + sent["pp"]
    sent["ep"] = 0
    if ep is not None and ep > 1 and shape is not None and shape.experts > 1:
        held = tokens_mb // (tp if sequence_parallel else 1) * shape.experts_per_token * shape.hidden * element
        sent["ep"] = (6 if mode == "full" else 4) * layers_here * accumulate * (ep - 1) * held // ep
        sent["total"] += sent["ep"]
    return {"step_seconds": step, "seconds": seconds, "bubble": (pp - 1) / (accumulate + pp - 1),
            "micro_batches": accumulate, "sequences": sequences, "tokens": sequences * seq, "flops": model_flops,
            "tokens_per_second_per_card": sequences * seq / step / cards,
            "mfu": model_flops / (step * cards * hw.peak_flops), "links": where, "slowest_stage": slowest,
            "sent": sent}


def _layouts(cards: int, *, hidden, heads, split, layers, shape, ep, global_batch, micro_batch):
    """Every (dp, tp, pp, M, ep) of `cards` cards the model allows, with M micro-batches per data-parallel rank."""
    counts = [n for n in (hidden, heads, *split) if n is not None]
    if shape is not None:
        counts += [shape.heads, shape.kv_heads, shape.intermediate]
    for degrees in factorizations(cards, ("dp", "tp", "pp")):
        dp, tp, pp = degrees.values()
        if any(n % tp for n in counts) or (layers is not None and layers % pp):
            continue
        if global_batch % (dp * micro_batch):
            continue
        m = global_batch // (dp * micro_batch)
        if pp > 1 and m < pp:                     # MindSpore: micro_batch_num >= stages
            continue
        if ep is not None:
            choices = [ep] if (dp * tp) % ep == 0 else []
        elif shape is not None and shape.experts > 1:
            choices = [None] + [e for e in range(2, shape.experts + 1)
                                if shape.experts % e == 0 and (dp * tp) % e == 0]
        else:
            choices = [None]
        for expert_parallel in choices:
            yield dp, tp, pp, m, expert_parallel


def search(params: float, cards: int, card: str, *, heads: int | None = None, split: tuple = (),
           global_batch: int | None = None, machine: Machine | None = None, ep: int | None = None,
           expert_params: float = 0, **options) -> list[dict]:
    """Every layout dp × tp × pp = cards, each ZeRO stage, with and without full recompute (and selective
    recompute when `heads` adds the attention-score term), each expert-parallel degree of a mixture of experts
    (`shape`, or only `ep` when given), that fits on `card`, fastest estimated step first:
    [{"dp", "tp", "pp", "ep", "zero", "recompute" (True: full), "selective", "micro_batches", "total" (=
    "memory_bytes", the busiest stage's bytes per card), "sent" (bytes per card and step), "bubble" (the
    pipeline's idle share), "step_seconds", "seconds" (step_time's parts), "tokens_per_second_per_card", "mfu",
    "global_batch"}]. Every layout does the same work: `global_batch` sequences per step (default cards ×
    micro_batch × accumulate), M = global_batch / (dp × micro_batch) micro-batches per data-parallel rank.
    tp must divide the hidden size, `heads`, every count in `split` and the config's heads, key/value heads and MLP
    width; pp must divide the layers, and a pipeline needs at least pp micro-batches per step (MindSpore:
    micro_batch_num >= stages)."""
    allowed = USABLE * card_bytes(card)
    hw = machine or Machine()
    options = dict(options)
    micro_batch = options.pop("micro_batch", 1)
    accumulate = options.pop("accumulate", 1)
    shape, layers, hidden = options.get("shape"), options.get("layers"), options.get("hidden")
    if global_batch is None:
        global_batch = cards * micro_batch * accumulate
    if isinstance(global_batch, bool) or not isinstance(global_batch, int) or global_batch < 1:
        raise PlanError(f"--global-batch: must be a positive whole number of sequences, got {global_batch!r}")
    if ep is None and shape is not None and shape.experts > 1:
        expert_params = shape.expert_parameters()
    timing = {k: options[k] for k in ("precision", "layers", "hidden", "seq", "vocab", "shape", "sequence_parallel",
                                      "schedule") if k in options}
    modes = ("none", "full") + (("selective",) if heads else ())
    fits = []
    for dp, tp, pp, m, expert_parallel in _layouts(cards, hidden=hidden, heads=heads, split=split, layers=layers,
                                                   shape=shape, ep=ep, global_batch=global_batch,
                                                   micro_batch=micro_batch):
        experts = {"ep": expert_parallel, "expert_params": expert_params} if expert_parallel else {}
        for zero in (0, 1, 2, 3) if dp > 1 else (0,):
            for mode in modes:
                memory = plan(params, dp=dp, tp=tp, pp=pp, zero=zero, heads=heads, recompute=mode,
                              micro_batch=micro_batch, accumulate=m, **experts, **options)["total"]
                if memory > allowed:
                    continue
                time = step_time(params, dp=dp, tp=tp, pp=pp, zero=zero, heads=heads, recompute=mode,
                                 micro_batch=micro_batch, accumulate=m, machine=hw, **experts, **timing)
                fits.append({"dp": dp, "tp": tp, "pp": pp, "ep": expert_parallel or 1, "zero": zero,
                             "recompute": mode == "full", "selective": mode == "selective", "micro_batches": m,
                             "total": memory, "memory_bytes": memory, "sent": time["sent"]["total"],
                             "bubble": time["bubble"], "step_seconds": time["step_seconds"],
                             "seconds": time["seconds"], "tokens_per_second_per_card":
                             time["tokens_per_second_per_card"], "mfu": time["mfu"], "global_batch": global_batch})
    return sorted(fits, key=lambda f: (f["step_seconds"], f["zero"], f["recompute"], f["selective"], f["total"]))


def no_fit_reason(params: float, cards: int, card: str, *, heads: int | None = None, global_batch: int | None = None,
                  **options) -> str:
    """Why no layout of `cards` cards fits: none splits the model and the batch, the model states alone exceed the
    card even sharded over every card, or the activations do; with the fix each calls for."""
    micro_batch = options.get("micro_batch", 1)
    batch = global_batch or cards * micro_batch * options.get("accumulate", 1)
    if not any(_layouts(cards, hidden=options.get("hidden"), heads=heads, split=(), layers=options.get("layers"),
                        shape=options.get("shape"), ep=None, global_batch=batch, micro_batch=micro_batch)):
        return (f"none splits this model and a global batch of {batch} sequences: tp must "
                "divide the heads, key/value heads and widths, pp the layers, dp x micro-batch the global batch, and "
                "each pipeline needs at least pp micro-batches per step; raise --global-batch or change --cards")
    allowed = USABLE * card_bytes(card)
    per_param = bytes_per_param(options.get("optimizer", "adam"), options.get("precision", "bf16-mixed"))
    states = sum(per_param.values()) * params / cards      # ZeRO-3 over all cards, or tp x pp x ZeRO-3: the least
    if states > allowed:
        need = math.ceil(sum(per_param.values()) * params / allowed)
        return (f"the model states alone need {states / GB:.1f} GB per card even sharded over all {cards} cards "
                f"(ZeRO-3, tp, pp): more cards (at least {need} cards), a card with more memory, or a lighter "
                "optimizer (--optimizer); --seq, --micro-batch and --accumulate change only the activations")
    return (f"the model states fit when sharded ({states / GB:.1f} GB per card at best) but not with the "
            "activations: a shorter --seq or a smaller --micro-batch, --heads left out (flash attention), or more "
            "cards; recompute and every ZeRO stage were tried")


class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one line that names the flag, no usage block
        self.exit(2, f"helpers.memory: {message}\n")


def _count(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _negative_values_joined(argv: list[str]) -> list[str]:
    """["--params", "-7e9"] as ["--params=-7e9"]: argparse would read -7e9 as a flag and say the value is missing."""
    out: list[str] = []
    for arg in argv:
        number = arg[1:2].isdigit() or arg[1:2] == "." or arg[1:].lower() in ("inf", "infinity", "nan")
        if out and out[-1].startswith("--") and "=" not in out[-1] and arg[:1] == "-" and number:
            out[-1] += "=" + arg
        else:
            out.append(arg)
    return out


def _parser() -> _Parser:
    parser = _Parser(prog="python -m helpers.memory",
                     description="Bytes per card, and a step's estimated time, for training a model.")
    parser.add_argument("--params", type=_count, help="parameter count, e.g. 7e9 (or --config)")
    parser.add_argument("--config", help="a Hugging Face config.json: the exact parameter count and the shape")
    parser.add_argument("--dp", type=_count, default=1, help="data-parallel degree")
    parser.add_argument("--tp", type=_count, default=1, help="tensor-parallel degree")
    parser.add_argument("--pp", type=_count, default=1, help="pipeline-parallel degree (stages)")
    parser.add_argument("--ep", type=_count, help="expert-parallel degree (a mixture of experts from --config)")
    parser.add_argument("--zero", type=int, default=0, help="optimizer-sharding stage 0-3")
    parser.add_argument("--optimizer-level", help="instead of --zero: MindSpore's hsdp level1 | level2 | level3")
    parser.add_argument("--optimizer", default="adam", help="sgd | momentum | adam")
    parser.add_argument("--precision", default="bf16-mixed", help="fp32 | fp16-mixed | bf16-mixed")
    parser.add_argument("--layers", type=_count, help="layers, for activations")
    parser.add_argument("--hidden", type=_count, help="hidden size, for activations")
    parser.add_argument("--heads", type=_count, help="attention heads (adds the attention-score term)")
    parser.add_argument("--vocab", type=_count, help="vocabulary size (adds the logits and the loss)")
    parser.add_argument("--seq", type=_count, default=1, help="sequence length")
    parser.add_argument("--micro-batch", type=_count, default=1, help="sequences per micro-batch, per card")
    parser.add_argument("--accumulate", type=_count, help="micro-batches per step and data-parallel rank (default 1)")
    parser.add_argument("--global-batch", type=_count,
                        help="sequences per step over the whole job (with --search: default cards x micro-batch x "
                             "accumulate; in a plan: instead of --accumulate)")
    parser.add_argument("--recompute", nargs="?", const="full", default="none",
                        help="activation recompute: full (the default when given alone) | selective")
    parser.add_argument("--no-sp", action="store_true", help="tensor parallelism without sequence parallelism")
    parser.add_argument("--schedule", default="1f1b", help="pipeline schedule: 1f1b | gpipe")
    parser.add_argument("--block", help="transformer | llama | mlp (default: llama with --config, else transformer)")
    parser.add_argument("--card", help="910B | 910A | a size in bytes: say whether the plan fits")
    parser.add_argument("--search", action="store_true",
                        help="list the layouts of --cards cards that fit --card, fastest estimated step first")
    parser.add_argument("--cards", type=_count, help="with --search: the number of cards")
    parser.add_argument("--top", type=_count, default=20, help="with --search: how many layouts to print (20)")
    parser.add_argument("--node-cards", type=_count, help=f"cards per node ({NODE_CARDS})")
    parser.add_argument("--peak-flops", type=_count,
                        help=f"a card's peak FLOP/s (assumed {PEAK_FLOPS_ASSUMED:.3g}: no cited 910B figure)")
    parser.add_argument("--efficiency", type=_count,
                        help=f"the share of the peak a step's matrix products reach (assumed {EFFICIENCY_ASSUMED})")
    for where, label in (("intra", "inside a node"), ("inter", "between nodes")):
        latency, bandwidth = LINKS[where]
        parser.add_argument(f"--{where}-bw", type=_count,
                            help=f"bytes/s per card {label} (example {bandwidth:.3g}, not measured)")
        parser.add_argument(f"--{where}-latency", type=_count,
                            help=f"seconds per message {label} (example {latency:.3g}, not measured)")
    parser.add_argument("--json", action="store_true", help="print bytes (and the time) as one JSON object")
    return parser


def _whole(flag: str, value) -> int:
    if value is None or not (value > 0 and float(value).is_integer()):
        raise PlanError(f"{flag}: must be a positive whole number, got {value!r}")
    return int(value)


def _assumptions(hw: Machine) -> str:
    said = [f"peak {hw.peak_flops / 1e12:.0f} TFLOP/s", f"efficiency {hw.efficiency:g}",
            f"links {hw.intra_bandwidth / 1e9:g} GB/s inside a node of {hw.node_cards}, "
            f"{hw.inter_bandwidth / 1e9:g} GB/s between"]
    assumed = [flag for name, flag in MACHINE_FLAGS.items() if name in hw.assumed]
    return "; ".join(said) + (f" (assumed, not measured: set {', '.join(assumed)})" if assumed else "")


def _time_line(time: dict) -> str:
    parts = ", ".join(f"{name} {value:.3g}" for name, value in time["seconds"].items() if value)
    idle = f", pipeline idle {time['bubble']:.0%}" if time["bubble"] else ""
    return f"{time['step_seconds']:.3g} s per step ({parts}{idle})"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(_negative_values_joined(sys.argv[1:] if argv is None else argv))
    whole = {k: (int(v) if isinstance(v, float) and v > 0 and v.is_integer() else v) for k, v in vars(args).items()}
    try:
        shape = None
        if args.config:
            if args.params is not None:
                raise PlanError("--params: give it or --config, not both (--config counts the parameters)")
            try:
                shape = read_config(args.config)
            except ConfigError as exc:
                raise PlanError(f"--config: {exc}") from None
            whole.update(params=shape.parameters(), layers=shape.layers, hidden=shape.hidden, vocab=shape.vocab)
        elif args.params is None:
            raise PlanError("--params: give the parameter count (or --config config.json)")
        if args.search and (args.cards is None or not args.card):
            raise PlanError("--search: give --cards N and --card 910B|910A|BYTES with it")
        if args.card:
            card_bytes(args.card)
        hw = machine(peak_flops=args.peak_flops, efficiency=args.efficiency, node_cards=args.node_cards,
                     intra_bandwidth=args.intra_bw, intra_latency=args.intra_latency,
                     inter_bandwidth=args.inter_bw, inter_latency=args.inter_latency)
        accumulate = whole["accumulate"] if args.accumulate is not None else 1
        if args.global_batch is not None and not args.search:
            if args.accumulate is not None:
                raise PlanError("--global-batch: give it or --accumulate, not both (one sets the other)")
            batch = _whole("--global-batch", args.global_batch)
            replicas = whole["dp"] * whole["micro_batch"] if isinstance(whole["dp"], int) and isinstance(
                whole["micro_batch"], int) else None
            if replicas is None or batch % replicas:
                raise PlanError(f"--global-batch: {batch} sequences do not split into dp x micro-batch = "
                                f"{args.dp:g} x {args.micro_batch:g}")
            accumulate = batch // replicas
        mode = recompute_mode(args.recompute)
        options = {"optimizer": args.optimizer, "precision": args.precision, "layers": whole["layers"],
                   "hidden": whole["hidden"], "seq": whole["seq"], "micro_batch": whole["micro_batch"],
                   "accumulate": accumulate, "vocab": whole["vocab"], "shape": shape,
                   "block": args.block or ("llama" if shape else "transformer"), "sequence_parallel": not args.no_sp,
                   "schedule": args.schedule}
        experts = {"ep": whole["ep"], "expert_params": shape.expert_parameters() if shape else 0} if args.ep else {}
        layout = {"dp": whole["dp"], "tp": whole["tp"], "pp": whole["pp"], "zero": args.zero}
        mine = {} if args.search else experts     # a search tries the expert-parallel degrees itself
        stages = plan_stages(whole["params"], **layout, heads=whole["heads"], recompute=mode,
                             optimizer_level=args.optimizer_level, **mine, **options)
        busiest = max(stages, key=lambda stage: stages[stage]["total"])
        result = stages[busiest]
        time = None
        if whole["layers"] is not None and not args.search:
            timing = {k: options[k] for k in ("precision", "layers", "hidden", "seq", "micro_batch", "accumulate",
                                              "vocab", "shape", "sequence_parallel", "schedule")}
            time = step_time(whole["params"], **layout, heads=whole["heads"], recompute=mode, machine=hw,
                             optimizer_level=args.optimizer_level, **mine, **timing)
        layouts = None
        if args.search:
            cards = whole["cards"]
            if not isinstance(cards, int):
                raise PlanError(f"--cards: must be a positive whole number, got {args.cards!r}")
            batch = None if args.global_batch is None else _whole("--global-batch", args.global_batch)
            options.pop("accumulate")
            layouts = search(whole["params"], cards, args.card, heads=whole["heads"], global_batch=batch,
                             machine=hw, accumulate=accumulate, ep=whole["ep"] if args.ep else None,
                             expert_params=experts.get("expert_params", 0), **options)
            batch = cards * whole["micro_batch"] * accumulate if batch is None else batch
            top = _whole("--top", args.top)
    except PlanError as exc:
        print(f"helpers.memory: {exc}", file=sys.stderr)
        return 2
    fits, why = verdict(result["total"], args.card, result) if args.card else (None, None)
    if args.json:
        out = {**result, "parameters": int(whole["params"])}
        if len(stages) > 1:
            out["stage"] = busiest
        if args.card:
            out.update(card=args.card, card_bytes=int(card_bytes(args.card)), fits=fits)
        if time is not None:
            out["time"] = {**time, "machine": asdict(hw)}
        if layouts is not None:
            out["layouts"] = layouts
        print(json.dumps(layouts if args.search else out))   # --search --json: the list, fastest first
        return 0
    sharding = f"hsdp {args.optimizer_level}" if args.optimizer_level else f"ZeRO stage {args.zero}"
    model = f"{shape.model_type} from {args.config}: {whole['params']:,}" if shape else f"{args.params:.4g}"
    over_ep = f" (experts over ep {whole['ep']})" if args.ep else ""
    where = f" (the {busiest} stage, the busiest)" if len(stages) > 1 else ""
    print(f"{model} parameters, dp {whole['dp']} x tp {whole['tp']} x pp {whole['pp']}{over_ep}, {sharding}, "
          f"{args.optimizer}, {args.precision}: per card{where}")
    for name in (*COMPONENTS, "total"):
        print(f"  {name:<12}{result[name] / GB:10.3f} GB")
    if why:
        print(why)
    if time is not None:
        print(f"estimated: {_time_line(time)} for {time['sequences']} sequences of {whole['seq']} tokens; "
              f"{_assumptions(hw)}")
    if layouts is not None:
        if layouts:
            print(f"layouts of {whole['cards']} cards that fit on {args.card}, fastest estimated step first, each "
                  f"doing a global batch of {batch} sequences of {whole['seq']} tokens (--global-batch); "
                  f"{_assumptions(hw)}:")
        else:
            reason = no_fit_reason(whole["params"], whole["cards"], args.card, heads=whole["heads"],
                                   global_batch=batch, accumulate=accumulate, **options)
            print(f"no layout of {whole['cards']} cards fits on {args.card}: {reason}")
        for f in layouts[:top]:
            extra = " + recompute" if f["recompute"] else " + selective recompute" if f["selective"] else ""
            ep = f" x ep {f['ep']}" if f["ep"] > 1 else ""
            idle = f", pipeline idle {f['bubble']:.0%}" if f["pp"] > 1 else ""
            print(f"  dp {f['dp']} x tp {f['tp']} x pp {f['pp']}{ep}, ZeRO {f['zero']}{extra}, M {f['micro_batches']}: "
                  f"{f['step_seconds']:.3g} s per step{idle}, {f['total'] / GB:.1f} GB per card, "
                  f"{f['sent'] / GB:.2f} GB sent per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
