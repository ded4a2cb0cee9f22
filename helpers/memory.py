"""Bytes per card for training a model: a planner, arithmetic only (notebook 09 introduces it).

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

Activations (only when --layers and --hidden are given), for one micro-batch of `micro_batch` sequences
of `seq` tokens, with b = bytes per element (4 in float32, 2 in mixed precision):

- block "transformer": Korthikanti et al., 2022, "Reducing Activation Recomputation in Large Transformer
  Models", section 4. Their eq. (1) is a layer without parallelism, s·B·h·(34 + 5·a·s/h); eq. (2) tensor
  parallelism alone, s·B·h·(10 + 24/t + 5·a·s/(h·t)). The planner takes tensor plus sequence parallelism
  (notebook 11), the whole of eq. (1) divided by t = tp: s·B·h·(34 + 5·a·s/h) / tp bytes per layer
  (a = heads; without --heads the attention-score term is left out, as with flash attention), written
  for 16-bit activations and doubled for float32. With full recompute a layer keeps only its input,
  2·s·B·h / tp bytes (b·s·B·h in float32), and one layer's full activations exist while it is recomputed.
- block "llama" (the default with --config): a Llama-type layer (llama, mistral, qwen2, mixtral), counted the
  way Korthikanti et al. count, the inputs each operation keeps for its backward, in 16-bit bytes per token:
  attention 2h (norm input) + 2h (the q, k, v projections' input) + 2q (queries) + 4k (keys and values) + 2q
  (the output projection's input) + 2·a·s (softmax output; no dropout in these models), with q = heads·d and
  k = kv_heads·d; SwiGLU MLP 2h (norm input) + 2h (gate and up projections' input) + 8I (gate, up, silu(gate)
  and their product, I = intermediate_size). For Llama-2-7B (k = q = h, I = 2.6875h) that is 37.5·s·B·h per
  layer against GPT's 34. A mixture of experts replaces the MLP's 2h + 8I by 2E (the router's probabilities,
  E experts) + experts_per_token·(2h + 8I) (each token's copies and their experts' intermediates).
- block "mlp": notebook 09's residual block x + Dense(4h→h)(ReLU(Dense(h→4h)(x))). Kept per token and
  layer: its input (h) and the ReLU output (4h), b·5h bytes; while one layer runs backward, two more
  4h-wide buffers (its output gradient and its input gradient's product), b·8h per token. With recompute
  a layer keeps its input (b·h); the recomputed layer's 5h and the 8h working set come on top.

With a vocabulary (--vocab, or --config), one micro-batch's logits and loss are added: the logits at b bytes
and a float32 copy for the softmax cross-entropy, s·B·V·(b + 4) / tp bytes (vocabulary-parallel output layer),
plus the embedding's output, b·s·B·h. They sit on the last and the first stage; the planner adds both to the
first stage's figure, an upper bound for the fullest card.

A card holds layers / pp layers. Under a 1F1B pipeline schedule the first stage holds min(pp, accumulate)
micro-batches in flight, so pipeline parallelism does not shrink activations per card (Korthikanti et al.,
section 4.2.3). Gradient accumulation keeps one micro-batch's activations per step in flight; its
gradients sum into the gradient buffer counted above.

    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --optimizer adam --precision bf16-mixed
    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --json
    python -m helpers.memory --config config.json --dp 8 --zero 1 --seq 4096 --card 910B
    python -m helpers.memory --config config.json --seq 4096 --card 910B --search --cards 8

--config reads a Hugging Face config.json (helpers.hf_config: llama, mistral, qwen2, mixtral) for the exact
parameter count, the layers, hidden size and vocabulary; its heads only limit tp (add --heads for the
attention-score term; left out, the planner assumes flash attention, as Ascend jobs use), and its activations
follow block "llama": grouped key/value heads, the SwiGLU width and the experts per token.
--card 910B | 910A | BYTES gives a verdict: it fits when the total is at most
90% of the card (64 GB or 32 GB, counted as 10^9 bytes: below the cards' 64 and 32 GiB), the rest left to
MindSpore's runtime, workspace, communication buffers and fragmentation. --search --cards N lists every layout
dp × tp × pp = N (with each ZeRO stage, with and without recompute) that fits, fewest bytes sent per card and
step first (see communication_bytes).

GB here means 10^9 bytes, as in the ZeRO paper's figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from helpers.hf_config import ConfigError, ModelShape, read_config
from helpers.mesh import factorizations

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}     # float32 tensors the size of the weights
PRECISIONS = ("fp32", "fp16-mixed", "bf16-mixed")
BLOCKS = ("transformer", "llama", "mlp")
GB = 1e9
CARDS = {"910B": 64 * GB, "910A": 32 * GB}          # HBM per card (Huawei: Atlas 800T A2's 910B; Atlas 300T's 910)
USABLE = 0.9                                       # the share of a card the planner lets a plan fill
COMPONENTS = ("params", "grads", "optimizer", "activations")


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


def activation_bytes(*, layers: int, hidden: int, seq: int = 1, micro_batch: int = 1, heads: int | None = None,
                     tp: int = 1, pp: int = 1, accumulate: int = 1, recompute: bool = False,
                     precision: str = "bf16-mixed", block: str = "transformer", vocab: int | None = None,
                     shape: ModelShape | None = None) -> int:
    """Activation bytes per card for one training step (formulas in the module docstring). Block "llama" takes
    the layer's widths from `shape` (helpers.hf_config.read_config)."""
    if block not in BLOCKS:
        raise PlanError(f"--block: unknown value {block!r} (choose from {', '.join(BLOCKS)})")
    if block == "llama" and shape is None:
        raise PlanError("--block: llama needs the model's config.json (--config), for its widths")
    element = element_bytes(precision)
    tokens = seq * micro_batch
    layers_here = layers // pp
    in_flight = min(pp, accumulate)
    if block in ("transformer", "llama"):   # 16-bit bytes per token, and per attention-score entry
        per_token, per_score = (34 * hidden, 5) if block == "transformer" else (llama_layer_units(shape), 2)
        full = tokens * per_token + (per_score * heads * seq * tokens if heads else 0)
        full = full * element // 2 // tp
        kept = element * tokens * hidden // tp if recompute else full
        working = full if recompute else 0
    else:
        kept = element * tokens * hidden * (1 if recompute else 5)
        working = element * tokens * hidden * (8 + (5 if recompute else 0))
    ends = element * tokens * hidden + tokens * vocab * (element + 4) // tp if vocab else 0   # embedding, logits, loss
    return in_flight * layers_here * kept + working + ends


def llama_layer_units(shape: ModelShape) -> int:
    """16-bit bytes one token keeps for the backward pass in one Llama-type layer, without the attention scores
    (block "llama" in the module docstring)."""
    h, q, k = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = 2 * h + 2 * h + 2 * q + 4 * k + 2 * q
    expert = 2 * h + 8 * shape.intermediate
    mlp = 2 * h + (expert if shape.experts == 1 else 2 * shape.experts + shape.experts_per_token * expert)
    return attention + mlp


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
    --hidden only the dp term is counted."""
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


def plan(params: float, *, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, optimizer: str = "adam",
         precision: str = "bf16-mixed", layers: int | None = None, hidden: int | None = None, seq: int = 1,
         micro_batch: int = 1, heads: int | None = None, accumulate: int = 1, recompute: bool = False,
         block: str = "transformer", optimizer_level: str | None = None, vocab: int | None = None,
         ep: int | None = None, expert_params: float = 0, shape: ModelShape | None = None) -> dict[str, int]:
    """Bytes per card: {"params", "grads", "optimizer", "activations", "total"} (integers). `zero` is the ZeRO
    stage; `optimizer_level` instead plans MindSpore's hsdp level ("level1", "level2", "level3"). With `ep`, the
    `expert_params` of a mixture of experts are split over ep expert-parallel ranks (and the stages), not by tp;
    the ep ranks are carved out of the dp x tp ones, and ZeRO shards the experts over the dp x tp / ep ranks that
    hold the same experts (notebook 13)."""
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
    if (layers is None) != (hidden is None):
        raise PlanError("--layers: give --layers and --hidden together (or neither: no activations)")
    if layers is not None and layers % pp:
        raise PlanError(f"--pp: {pp} does not divide --layers {layers}")
    if hidden is not None and hidden % tp:
        raise PlanError(f"--tp: {tp} does not divide --hidden {hidden}")
    if heads is not None and heads % tp:
        raise PlanError(f"--tp: {tp} does not divide --heads {heads}")
    if ep is not None and (dp * tp) % ep:
        raise PlanError(f"--ep: {ep} does not divide dp x tp = {dp * tp} (the expert-parallel ranks are carved "
                        "out of the data- and tensor-parallel ones)")
    if ep is not None and not 0 < expert_params <= params:
        raise PlanError("--ep: needs the experts' share of the parameters (--config of a mixtral model)")
    per_param = bytes_per_param(optimizer, precision)
    experts = int(expert_params) if ep is not None else 0
    dense = math.ceil((int(params) - experts) / (tp * pp))   # this card's share of the model (without experts)
    mine = math.ceil(experts / (ep * pp)) if experts else 0   # and of the experts
    here = dense + mine
    shard = math.ceil(dense / dp) + (math.ceil(mine / (dp * tp // ep)) if experts else 0)   # of a ZeRO-sharded buffer
    sharded = {"params": zero >= 3, "grads": zero >= 2, "optimizer": zero >= 1}
    if optimizer_level is not None:
        sharded = {name: name in OPTIMIZER_LEVELS[optimizer_level] for name in sharded}
    out = {name: per_param[name] * (shard if sharded[name] else here) for name in per_param}
    out["activations"] = 0 if layers is None else activation_bytes(
        layers=layers, hidden=hidden, seq=seq, micro_batch=micro_batch, heads=heads, tp=tp, pp=pp,
        accumulate=accumulate, recompute=recompute, precision=precision, block=block, vocab=vocab, shape=shape)
    out["total"] = sum(out[name] for name in COMPONENTS)
    return out


def card_bytes(card: str) -> float:
    """910B, 910A, or a size in bytes (7.2e10)."""
    if card in CARDS:
        return CARDS[card]
    try:
        size = float(card)
    except ValueError:
        raise PlanError(f"--card: {card!r} is not 910B, 910A or a size in bytes") from None
    if size <= 0:
        raise PlanError(f"--card: must be a positive size in bytes, got {card!r}")
    return size


def verdict(total: float, card: str) -> tuple[bool, str]:
    """Whether `total` bytes fit on `card`, and one sentence saying by how much and why."""
    size = card_bytes(card)
    allowed = USABLE * size
    name = f"a {card} ({size / GB:.0f} GB)" if card in CARDS else f"a card of {size / GB:.1f} GB"
    if total <= allowed:
        return True, (f"fits on {name}: {total / GB:.1f} GB planned, {(allowed - total) / GB:.1f} GB to spare inside "
                      f"the {allowed / GB:.1f} GB the planner allows (the last {1 - USABLE:.0%} is left to MindSpore's "
                      "runtime, workspace, communication buffers and fragmentation)")
    return False, (f"does not fit on {name}: {total / GB:.1f} GB planned, {(total - allowed) / GB:.1f} GB over the "
                   f"{allowed / GB:.1f} GB the planner allows: shard further (--zero, --tp, --pp), --recompute, or "
                   "more cards (--search --cards N)")


def search(params: float, cards: int, card: str, *, heads: int | None = None, split: tuple = (),
           **options) -> list[dict]:
    """Every layout dp × tp × pp = cards, each ZeRO stage, with and without recompute, that fits on `card`:
    [{"dp", "tp", "pp", "zero", "recompute", "total", "sent", "bubble"}], fewest bytes sent per card and step
    first. Bytes are not time: the pipeline's idle share, (pp−1)/(accumulate+pp−1), is given beside them, and
    recompute's second forward pass is not weighed at all.
    tp must divide the hidden size and every count in `split` (attention and key/value heads); pp must divide
    the layers, and a pipeline needs at least pp micro-batches per step (MindSpore: micro_batch_num >= stages)."""
    fits, allowed = [], USABLE * card_bytes(card)
    layers, hidden, accumulate = options.get("layers"), options.get("hidden"), options.get("accumulate", 1)
    traffic = {k: options[k] for k in ("precision", "layers", "hidden", "seq", "micro_batch", "accumulate")
               if k in options}
    for degrees in factorizations(cards, ("dp", "tp", "pp")):
        dp, tp, pp = degrees.values()
        if any(n is not None and n % tp for n in (hidden, heads, *split)):
            continue
        if (layers is not None and layers % pp) or (pp > 1 and accumulate < pp):
            continue
        bubble = (pp - 1) / (accumulate + pp - 1)    # notebook 10's formula
        for zero in (0, 1, 2, 3) if dp > 1 else (0,):
            for recompute in (False, True):
                layout = {**degrees, "zero": zero}
                total = plan(params, heads=heads, recompute=recompute, **layout, **options)["total"]
                if total <= allowed:
                    sent = communication_bytes(params, recompute=recompute, **layout, **traffic)["total"]
                    fits.append({**layout, "recompute": recompute, "total": total, "sent": sent, "bubble": bubble})
    return sorted(fits, key=lambda f: (f["sent"], f["recompute"], f["zero"], f["total"]))   # then the least work


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
        if out and out[-1].startswith("--") and "=" not in out[-1] and arg[:1] == "-" and arg[1:2].isdigit():
            out[-1] += "=" + arg
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m helpers.memory", description="Bytes per card for training a model.")
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
    parser.add_argument("--accumulate", type=_count, default=1, help="gradient-accumulation steps")
    parser.add_argument("--recompute", action="store_true", help="full activation recompute")
    parser.add_argument("--block", help="transformer | llama | mlp (default: llama with --config, else transformer)")
    parser.add_argument("--card", help="910B | 910A | a size in bytes: say whether the plan fits")
    parser.add_argument("--search", action="store_true", help="list the layouts of --cards cards that fit --card")
    parser.add_argument("--cards", type=_count, help="with --search: the number of cards")
    parser.add_argument("--json", action="store_true", help="print bytes as one JSON object")
    args = parser.parse_args(_negative_values_joined(sys.argv[1:] if argv is None else argv))
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
        options = {"optimizer": args.optimizer, "precision": args.precision, "layers": whole["layers"],
                   "hidden": whole["hidden"], "seq": whole["seq"], "micro_batch": whole["micro_batch"],
                   "accumulate": whole["accumulate"], "vocab": whole["vocab"], "shape": shape,
                   "block": args.block or ("llama" if shape else "transformer")}
        experts = {"ep": whole["ep"], "expert_params": shape.expert_parameters() if shape else 0} if args.ep else {}
        result = plan(whole["params"], dp=whole["dp"], tp=whole["tp"], pp=whole["pp"], zero=args.zero,
                      heads=whole["heads"], recompute=args.recompute, optimizer_level=args.optimizer_level,
                      **experts, **options)
        layouts = None
        if args.search:
            cards = whole["cards"]
            if not isinstance(cards, int):
                raise PlanError(f"--cards: must be a positive whole number, got {args.cards!r}")
            layouts = search(whole["params"], cards, args.card, heads=whole["heads"],
                             split=(shape.heads, shape.kv_heads) if shape else (), **options)
    except PlanError as exc:
        print(f"helpers.memory: {exc}", file=sys.stderr)
        return 2
    fits, why = verdict(result["total"], args.card) if args.card else (None, None)
    if args.json:
        out = {**result, "parameters": int(whole["params"])}
        if args.card:
            out.update(card=args.card, card_bytes=int(card_bytes(args.card)), fits=fits)
        if layouts is not None:
            out["layouts"] = layouts
        print(json.dumps(out))
        return 0
    sharding = f"hsdp {args.optimizer_level}" if args.optimizer_level else f"ZeRO stage {args.zero}"
    model = f"{shape.model_type} from {args.config}: {whole['params']:,}" if shape else f"{args.params:.4g}"
    over_ep = f" (experts over ep {whole['ep']})" if args.ep else ""
    print(f"{model} parameters, dp {whole['dp']} x tp {whole['tp']} x pp {whole['pp']}{over_ep}, {sharding}, "
          f"{args.optimizer}, {args.precision}: per card")
    for name in (*COMPONENTS, "total"):
        print(f"  {name:<12}{result[name] / GB:10.3f} GB")
    if why:
        print(why)
    if layouts is not None:
        print(f"layouts of {whole['cards']} cards that fit on {args.card}, fewest bytes sent per card and step first "
              f"(pipelines need --accumulate >= pp):" if layouts else
              f"no layout of {whole['cards']} cards fits on {args.card}: more cards, a shorter --seq, or --accumulate")
        for f in layouts[:20]:
            idle = f", pipeline idle {f['bubble']:.0%}" if f["pp"] > 1 else ""
            print(f"  dp {f['dp']} x tp {f['tp']} x pp {f['pp']}, ZeRO {f['zero']}"
                  f"{' + recompute' if f['recompute'] else ''}: {f['total'] / GB:.1f} GB per card, "
                  f"{f['sent'] / GB:.2f} GB sent per step{idle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
