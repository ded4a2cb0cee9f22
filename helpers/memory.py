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
  Models", eq. (2) with tensor and sequence parallelism: s·B·h·(34 + 5·a·s/h) / tp bytes per layer
  (a = heads; without --heads the attention-score term is left out, as with flash attention), written
  for 16-bit activations and doubled for float32. With full recompute a layer keeps only its input,
  2·s·B·h / tp bytes (b·s·B·h in float32), and one layer's full activations exist while it is recomputed.
- block "mlp": notebook 09's residual block x + Dense(4h→h)(ReLU(Dense(h→4h)(x))). Kept per token and
  layer: its input (h) and the ReLU output (4h), b·5h bytes; while one layer runs backward, two more
  4h-wide buffers (its output gradient and its input gradient's product), b·8h per token. With recompute
  a layer keeps its input (b·h); the recomputed layer's 5h and the 8h working set come on top.

A card holds layers / pp layers. Under a 1F1B pipeline schedule the first stage holds min(pp, accumulate)
micro-batches in flight, so pipeline parallelism does not shrink activations per card (Korthikanti et al.,
section 4.2.3). Gradient accumulation keeps one micro-batch's activations per step in flight; its
gradients sum into the gradient buffer counted above.

    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --optimizer adam --precision bf16-mixed
    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --json

GB here means 10^9 bytes, as in the ZeRO paper's figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}     # float32 tensors the size of the weights
PRECISIONS = ("fp32", "fp16-mixed", "bf16-mixed")
BLOCKS = ("transformer", "mlp")
GB = 1e9
COMPONENTS = ("params", "grads", "optimizer", "activations")


class PlanError(ValueError):
    """Bad input; the message starts with the flag it names."""


def bytes_per_param(optimizer: str, precision: str) -> dict[str, int]:
    """Bytes per parameter for the weights, the gradients and the optimizer state (ZeRO's 2 + 2 + K)."""
    if optimizer not in OPTIMIZER_SLOTS:
        raise PlanError(f"--optimizer: unknown value {optimizer!r} (choose from {', '.join(OPTIMIZER_SLOTS)})")
    if precision not in PRECISIONS:
        raise PlanError(f"--precision: unknown value {precision!r} (choose from {', '.join(PRECISIONS)})")
    mixed = precision != "fp32"
    weight = 2 if mixed else 4
    return {"params": weight, "grads": weight, "optimizer": 4 * OPTIMIZER_SLOTS[optimizer] + (4 if mixed else 0)}


def activation_bytes(*, layers: int, hidden: int, seq: int = 1, micro_batch: int = 1, heads: int | None = None,
                     tp: int = 1, pp: int = 1, accumulate: int = 1, recompute: bool = False,
                     precision: str = "bf16-mixed", block: str = "transformer") -> int:
    """Activation bytes per card for one training step (formulas in the module docstring)."""
    if block not in BLOCKS:
        raise PlanError(f"--block: unknown value {block!r} (choose from {', '.join(BLOCKS)})")
    element = 2 if precision != "fp32" else 4
    tokens = seq * micro_batch
    layers_here = layers // pp
    in_flight = min(pp, accumulate)
    if block == "transformer":
        full = tokens * hidden * 34 + (5 * heads * seq * tokens if heads else 0)   # 16-bit bytes per layer
        full = full * element // 2 // tp
        kept = element * tokens * hidden // tp if recompute else full
        working = full if recompute else 0
    else:
        kept = element * tokens * hidden * (1 if recompute else 5)
        working = element * tokens * hidden * (8 + (5 if recompute else 0))
    return in_flight * layers_here * kept + working


# MindSpore's own sharding levels, AutoParallel.hsdp(optimizer_level=...): what each shards over the data-parallel
# ranks, from its 2.10 docstring. level1 is not ZeRO-1: it shards the weights too, and leaves the gradients whole.
OPTIMIZER_LEVELS = {"level1": {"params", "optimizer"}, "level2": {"params", "optimizer", "grads"},
                    "level3": {"params", "optimizer", "grads"}}   # level3: gathered again before the backward


def plan(params: float, *, dp: int = 1, tp: int = 1, pp: int = 1, zero: int = 0, optimizer: str = "adam",
         precision: str = "bf16-mixed", layers: int | None = None, hidden: int | None = None, seq: int = 1,
         micro_batch: int = 1, heads: int | None = None, accumulate: int = 1, recompute: bool = False,
         block: str = "transformer", optimizer_level: str | None = None) -> dict[str, int]:
    """Bytes per card: {"params", "grads", "optimizer", "activations", "total"} (integers). `zero` is the ZeRO
    stage; `optimizer_level` instead plans MindSpore's hsdp level ("level1", "level2", "level3")."""
    counts = {"--params": params, "--dp": dp, "--tp": tp, "--pp": pp, "--seq": seq, "--micro-batch": micro_batch,
              "--accumulate": accumulate, "--layers": layers, "--hidden": hidden, "--heads": heads}
    for flag, value in counts.items():
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
    per_param = bytes_per_param(optimizer, precision)
    here = math.ceil(int(params) / (tp * pp))            # this card's share of the model
    shard = math.ceil(here / dp)                         # this card's share of a ZeRO-sharded buffer
    sharded = {"params": zero >= 3, "grads": zero >= 2, "optimizer": zero >= 1}
    if optimizer_level is not None:
        sharded = {name: name in OPTIMIZER_LEVELS[optimizer_level] for name in sharded}
    out = {name: per_param[name] * (shard if sharded[name] else here) for name in per_param}
    out["activations"] = 0 if layers is None else activation_bytes(
        layers=layers, hidden=hidden, seq=seq, micro_batch=micro_batch, heads=heads, tp=tp, pp=pp,
        accumulate=accumulate, recompute=recompute, precision=precision, block=block)
    out["total"] = sum(out[name] for name in COMPONENTS)
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message):   # one line that names the flag, no usage block
        self.exit(2, f"helpers.memory: {message}\n")


def _count(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m helpers.memory", description="Bytes per card for training a model.")
    parser.add_argument("--params", type=_count, required=True, help="parameter count, e.g. 7e9")
    parser.add_argument("--dp", type=_count, default=1, help="data-parallel degree")
    parser.add_argument("--tp", type=_count, default=1, help="tensor-parallel degree")
    parser.add_argument("--pp", type=_count, default=1, help="pipeline-parallel degree (stages)")
    parser.add_argument("--zero", type=int, default=0, help="optimizer-sharding stage 0-3")
    parser.add_argument("--optimizer-level", help="instead of --zero: MindSpore's hsdp level1 | level2 | level3")
    parser.add_argument("--optimizer", default="adam", help="sgd | momentum | adam")
    parser.add_argument("--precision", default="bf16-mixed", help="fp32 | fp16-mixed | bf16-mixed")
    parser.add_argument("--layers", type=_count, help="layers, for activations")
    parser.add_argument("--hidden", type=_count, help="hidden size, for activations")
    parser.add_argument("--heads", type=_count, help="attention heads (adds the attention-score term)")
    parser.add_argument("--seq", type=_count, default=1, help="sequence length")
    parser.add_argument("--micro-batch", type=_count, default=1, help="sequences per micro-batch, per card")
    parser.add_argument("--accumulate", type=_count, default=1, help="gradient-accumulation steps")
    parser.add_argument("--recompute", action="store_true", help="full activation recompute")
    parser.add_argument("--block", default="transformer", help="transformer | mlp")
    parser.add_argument("--json", action="store_true", help="print bytes as one JSON object")
    args = parser.parse_args(argv)
    whole = {k: (int(v) if isinstance(v, float) and v > 0 and v.is_integer() else v) for k, v in vars(args).items()}
    try:
        result = plan(whole["params"], dp=whole["dp"], tp=whole["tp"], pp=whole["pp"], zero=args.zero,
                      optimizer=args.optimizer, precision=args.precision, layers=whole["layers"],
                      hidden=whole["hidden"], seq=whole["seq"], micro_batch=whole["micro_batch"],
                      heads=whole["heads"], accumulate=whole["accumulate"], recompute=args.recompute,
                      block=args.block, optimizer_level=args.optimizer_level)
    except PlanError as exc:
        print(f"helpers.memory: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
        return 0
    sharding = f"hsdp {args.optimizer_level}" if args.optimizer_level else f"ZeRO stage {args.zero}"
    print(f"{args.params:.4g} parameters, dp {whole['dp']} x tp {whole['tp']} x pp {whole['pp']}, {sharding}, "
          f"{args.optimizer}, {args.precision}: per card")
    for name in (*COMPONENTS, "total"):
        print(f"  {name:<12}{result[name] / GB:10.3f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
