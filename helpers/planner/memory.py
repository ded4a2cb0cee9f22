"""Bytes per card for training a model: model states, activations, pipeline stages, a verdict per card (notebook
09 introduces the planner; notebook 13 adds experts, notebook 15 MindSpore's optimizer levels).

Model states follow the ZeRO paper (Rajbhandari et al., 2020, "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", section 3 and Figure 1). For Ψ parameters on one card:

- parameters: 4Ψ bytes in float32, 2Ψ in fp16/bf16 mixed precision;
- gradients: the same as the parameters;
- optimizer state: K·Ψ bytes. float32: SGD K = 0, Momentum K = 4 (one slot), Adam K = 8 (two slots).
  Mixed precision adds the float32 master copy of the weights: K = 4, 8 and 12.

MindSpore's own mixed precision (`mindspore.amp.auto_mixed_precision`, precision "fp16-amp" or "bf16-amp", what
notebook 17's train_hf.py runs) keeps the parameters, and so their gradients, in float32 and casts each matrix
product's inputs to 16 bits: 4Ψ + 4Ψ, 16-bit activations. `master_copy` says whether the optimizer keeps a float32
copy of the weights it updates (K + 4): the ZeRO paper's mixed precision does, and so does a script whose sharded
optimizer updates a shard of its own (notebooks 12 and 17, in float32 too); by default only the 16-bit precisions.

Tensor parallel (degree tp) and pipeline parallel (degree pp) split the parameters: each card holds
Ψ / (tp · pp) of them (an even split, rounded up). ZeRO stage s over the data-parallel degree dp then
shards: stage 1 the optimizer state, stage 2 the gradients too, stage 3 the parameters too. A shard
holds ceil(Ψ / dp) elements, as a flat buffer padded to a multiple of dp does.

MindSpore's own optimizer sharding (the parallel optimizer, `optimizer_level`, OPTIMIZER_LEVELS below) is planned
beside the ZeRO stages, from MindSpore 2.10's docstring of `AutoParallel.hsdp` and `parallel_optimizer_config`.

Pipeline stages are not alike. When the planner knows the embedding (--config, or --vocab with --layers and
--hidden), the first stage holds the embedding (V·h) and its layers, the last stage the output layer (V·h, a copy
of the embedding when the two are tied), the final norm and its layers; the layers' parameters split evenly. A
plan is the busiest stage's: each stage is counted and the one with the most bytes per card is reported. Without
the embedding's size (--params alone) the model splits evenly, as above.

Experts (a mixture of experts, --ep) are split as MindSpore Transformers splits them (mindformers 1.3.2,
models/llama/llama_layer.py, FeedForward.shard: weights [experts, width, hidden] sharded (ep, mp, 1)): over ep
expert-parallel ranks, carved out of the data-parallel ones (ep divides dp), and each expert's width over tp.

Activations (only when --layers and --hidden are given), for one micro-batch of `micro_batch` sequences
of `seq` tokens, with b = bytes per element (4 in float32, 2 in mixed precision):

- block "transformer": Korthikanti et al., 2022, "Reducing Activation Recomputation in Large Transformer
  Models", section 4. Their eq. (1) is a layer without parallelism, s·B·h·(34 + 5·a·s/h); eq. (2) tensor
  parallelism alone, s·B·h·(10 + 24/t + 5·a·s/(h·t)): the two norms' inputs, the dropout masks and the inputs of
  the first linear layers of attention and MLP (10) stay whole on every card. With sequence parallelism (the
  default, as notebook 11 builds it) they split too: eq. (1) divided by t = tp, s·B·h·(34 + 5·a·s/h) / tp bytes per
  layer (a = heads; without --heads the attention-score term is left out, as with flash attention), written for
  16-bit activations and doubled for float32. --no-sp plans eq. (2).
- block "llama" (the default with --config): a Llama-type layer (llama, mistral, qwen2, qwen3, mixtral, qwen3_moe),
  counted the way Korthikanti et al. count, the inputs each operation keeps for its backward, in 16-bit bytes per
  token:
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

Recompute: "full" (Korthikanti et al., section 5) keeps only each layer's input, 2·s·B·h bytes (divided by tp with
sequence parallelism) and one layer's full activations exist while it is recomputed. "selective" recomputes what
MindSpore Transformers' `select_recompute` recomputes (mindformers 1.3.2, models/utils.py, LayerSetting: the
default patterns `feed_forward.mul` and `feed_forward.w1.activation.silu`; models/llama/llama_transformer.py: the
attention core too when flash attention is off): the SwiGLU's silu(gate) and its product with up, 4I per token of
the llama block, and the attention scores (5as/(ht), or the llama block's 2·a·s) when there are any (--heads).
One layer's recomputed tensors exist at a time. With flash attention (no --heads) the kernel keeps no score matrix.

With a vocabulary (--vocab, or --config), one micro-batch's logits and loss sit on the last stage: the logits at
b bytes and a float32 copy for the softmax cross-entropy, s·B·V·(b + 4) / tp bytes (vocabulary-parallel output
layer); the embedding's output, b·s·B·h, sits on the first stage. With one stage both are on it.

Under a 1F1B pipeline schedule stage i holds min(pp − i, M) micro-batches in flight (M micro-batches a step): the
first stage holds min(pp, M), the last one, so pipeline parallelism does not shrink the first stage's activations
(Korthikanti et al., section 4.2.3). Under GPipe every stage holds all M. Gradient accumulation keeps one
micro-batch's activations per step in flight; its gradients sum into the gradient buffer counted above.

--card 910B | 910A | BYTES gives a verdict: it fits when the total is at most 90% of the card (64 GB or 32 GB,
counted as 10^9 bytes: below the cards' 64 and 32 GiB), the rest left to MindSpore's runtime, workspace,
communication buffers and fragmentation. GB here means 10^9 bytes, as in the ZeRO paper's figures.
"""

from __future__ import annotations

import math

from helpers.hf_config import ModelShape
from helpers.planner.errors import PlanError
from helpers.planner.machine import CARDS, GB, USABLE, card_bytes

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}     # float32 tensors the size of the weights
PRECISIONS = ("fp32", "fp16-mixed", "bf16-mixed", "fp16-amp", "bf16-amp")
BLOCKS = ("transformer", "llama", "mlp")
RECOMPUTE = ("none", "selective", "full")
SCHEDULES = ("1f1b", "gpipe")
COMPONENTS = ("params", "grads", "optimizer", "activations")

def element_bytes(precision: str) -> int:
    """Bytes of one activation (and of a weight or gradient in fp16/bf16-mixed): 2 in 16-bit precisions, 4 in
    float32."""
    return 2 if precision != "fp32" else 4


def weight_bytes(precision: str) -> int:
    """Bytes of one weight or gradient: 2 in fp16/bf16-mixed (the ZeRO paper's), 4 in float32 and under MindSpore's
    amp (fp16-amp, bf16-amp: float32 parameters, each product cast to 16 bits)."""
    return 2 if precision.endswith("-mixed") else 4


def bytes_per_param(optimizer: str, precision: str, master_copy: bool | None = None) -> dict[str, int]:
    """Bytes per parameter for the weights, the gradients and the optimizer state (ZeRO's 2 + 2 + K). master_copy:
    whether the optimizer keeps a float32 copy of the weights (default: in the 16-bit precisions only)."""
    if optimizer not in OPTIMIZER_SLOTS:
        raise PlanError(f"--optimizer: unknown value {optimizer!r} (choose from {', '.join(OPTIMIZER_SLOTS)})")
    if precision not in PRECISIONS:
        raise PlanError(f"--precision: unknown value {precision!r} (choose from {', '.join(PRECISIONS)})")
    weight = weight_bytes(precision)
    master = 4 if (precision != "fp32" if master_copy is None else master_copy) else 0
    return {"params": weight, "grads": weight, "optimizer": 4 * OPTIMIZER_SLOTS[optimizer] + master}


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
        if block == "llama":    # selective: silu(gate) and its product with up, 4I per token, split by tp
            score_bytes += tokens * 4 * shape.intermediate * shape.experts_per_token * element // 2 // tp
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
    sent = {"dp": (3 if zero >= 3 else 2) * (dp - 1) * here * weight_bytes(precision) // dp, "tp": 0, "pp": 0}
    if layers is not None and hidden is not None:
        tokens = seq * micro_batch
        sent["tp"] = (12 if recompute else 8) * (tp - 1) * tokens * hidden * element * (layers // pp) // tp * accumulate
        sent["pp"] = min(2, pp - 1) * tokens * hidden * element // tp * accumulate
    sent["total"] = sum(sent.values())
    return sent


# MindSpore's parallel optimizer (`enable_parallel_optimizer`, `parallel_optimizer_config={"optimizer_level": ...}`,
# or `AutoParallel.hsdp(optimizer_level=...)`), as MindSpore 2.10's docstrings of both define its levels
# (mindspore/context.py, set_auto_parallel_context; mindspore/parallel/auto_parallel.py, AutoParallel.hsdp):
# "level1: splitting is performed on weights and optimizer state. level2: ... weights, optimizer state, and
# gradients. level3: ... additionally, before the backward pass, the weights are further applied with allgather
# communication to release the memory used by the forward pass allgather", and of all three: "the implementation of
# optimizer sharding in static graph is inconsistent with dynamic graph like megatron, but the memory optimization
# effect is the same". So each level stores the weights sharded and all-gathers them in the forward; under level1
# and level2 the gathered weights stay until the backward (level3 exists to free them), which makes a card's peak
# that of ZeRO-1, -2 and -3: "at_rest" is what a card stores between steps, "at_peak" what stays sharded while the
# step runs, "zero" the ZeRO stage with the same bytes and the same communication per step (_dp_halves): level2 sets
# gradient_accumulation_shard, a reduce-scatter per accumulated micro-batch (the docstring of that key), as ZeRO-2.
# That key's docstring also says when a whole gradient buffer exists at all: "the accumulation gradient parameters"
# are "effective only when the model runs on pipeline training or gradient accumulation". With one micro-batch a step
# there is none: each gradient is reduce-scattered as the backward makes it, so level1 then peaks at ZeRO-2's bytes.
OPTIMIZER_LEVELS = {
    "level1": {"at_rest": {"params", "optimizer"}, "at_peak": {"optimizer"}, "zero": 1},
    "level2": {"at_rest": {"params", "optimizer", "grads"}, "at_peak": {"optimizer", "grads"}, "zero": 2},
    "level3": {"at_rest": {"params", "optimizer", "grads"}, "at_peak": {"params", "optimizer", "grads"}, "zero": 3},
}


def zero_stage(zero: int, optimizer_level: str | None) -> int:
    """The ZeRO stage whose bytes and communication a plan follows: `zero`, or the one `optimizer_level` matches."""
    return zero if optimizer_level is None else OPTIMIZER_LEVELS[optimizer_level]["zero"]

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
    if ep is not None and dp % ep:
        raise PlanError(f"--ep: {ep} does not divide dp {dp} (MindSpore Transformers carves the expert-parallel "
                        "ranks out of the data-parallel ones: data_parallel // expert_parallel)")
    if ep is not None and shape is not None and shape.experts % ep:
        raise PlanError(f"--ep: {ep} does not divide the model's {shape.experts} experts (num_local_experts): "
                        "each expert-parallel rank holds a whole number of them; choose --ep from "
                        f"{_divisors(shape.experts)}")
    if ep is not None and not 0 < expert_params <= params:
        raise PlanError("--ep: needs the experts' share of the parameters (--config of a mixtral or qwen3_moe model)")


def _stage_parameters(params: float, *, tp: int, pp: int, layers: int | None, hidden: int | None,
                      vocab: int | None, shape: ModelShape | None, experts: int, ep: int | None) -> dict:
    """{stage: (parameters on one card outside the experts, expert parameters on one card)} for the stages that
    can be the busiest (module docstring: the embedding on the first stage, the output layer on the last)."""
    mine = math.ceil(experts / (ep * tp * pp)) if experts else 0     # experts over ep, each one's width over tp
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
                sequence_parallel: bool = True, schedule: str = "1f1b",
                master_copy: bool | None = None) -> dict[str, dict[str, int]]:
    """plan() for each stage that can be the busiest: {"only": {...}} without a pipeline, else {"first": {...},
    "last": {...}}, each {"params", "grads", "optimizer", "activations", "total"}."""
    _check(params, dp=dp, tp=tp, pp=pp, zero=zero, optimizer_level=optimizer_level, layers=layers, hidden=hidden,
           seq=seq, micro_batch=micro_batch, heads=heads, accumulate=accumulate, vocab=vocab, ep=ep,
           expert_params=expert_params, shape=shape, block=block, schedule=schedule)
    per_param = bytes_per_param(optimizer, precision, master_copy)
    mode = recompute_mode(recompute)
    experts = int(expert_params) if ep is not None else 0
    stage = zero_stage(zero, optimizer_level)
    sharded = {"params": stage >= 3, "grads": stage >= 2, "optimizer": stage >= 1}
    if optimizer_level is not None:
        sharded = {name: name in OPTIMIZER_LEVELS[optimizer_level]["at_peak"] for name in sharded}
        sharded["grads"] = sharded["grads"] or accumulate == 1      # no accumulation buffer with one micro-batch
    out = {}
    shares = _stage_parameters(params, tp=tp, pp=pp, layers=layers, hidden=hidden, vocab=vocab, shape=shape,
                               experts=experts, ep=ep)
    for stage, (dense, mine) in shares.items():
        here = dense + mine
        shard = math.ceil(dense / dp) + (math.ceil(mine / (dp // ep)) if experts else 0)   # of a ZeRO buffer
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
         sequence_parallel: bool = True, schedule: str = "1f1b", master_copy: bool | None = None) -> dict[str, int]:
    """Bytes per card on the busiest pipeline stage: {"params", "grads", "optimizer", "activations", "total"}
    (integers). `zero` is the ZeRO stage; `optimizer_level` instead plans MindSpore's parallel optimizer level
    ("level1", "level2", "level3", OPTIMIZER_LEVELS). `recompute`: False, True (full), "none", "selective" or
    "full". With `ep`, the `expert_params` of a mixture of experts are split over ep expert-parallel ranks, tp and
    the stages, as MindSpore Transformers splits them; the ep ranks are carved out of the dp ones, and ZeRO shards
    the experts over the dp / ep ranks that hold the same slice of them (notebook 13). With `shape` (a config.json)
    tp must divide its heads, key/value heads and MLP width, and ep its experts. `sequence_parallel=False` plans
    tensor parallelism without sequence parallelism; `schedule` is the pipeline's, "1f1b" or "gpipe"; `master_copy`
    whether the optimizer keeps a float32 copy of the weights (bytes_per_param)."""
    stages = plan_stages(params, dp=dp, tp=tp, pp=pp, zero=zero, optimizer=optimizer, precision=precision,
                         layers=layers, hidden=hidden, seq=seq, micro_batch=micro_batch, heads=heads,
                         accumulate=accumulate, recompute=recompute, block=block, optimizer_level=optimizer_level,
                         vocab=vocab, ep=ep, expert_params=expert_params, shape=shape,
                         sequence_parallel=sequence_parallel, schedule=schedule, master_copy=master_copy)
    return max(stages.values(), key=lambda parts: parts["total"])


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


