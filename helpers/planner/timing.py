"""A step's estimated time for one layout (notebook 15 introduces it).

Per micro-batch on the slowest stage (the last holds the output layer): compute = FLOPs / tp ÷ (peak × efficiency)
(helpers.planner.flops: the FLOPs MindSpore counts); tensor parallelism's collectives (8 per layer, 12 with full
recompute: all-gathers and reduce-scatters of s·B·h·b with sequence parallelism, half as many all-reduces without)
over the tp group's link; expert parallelism's all-to-alls (4 per MoE layer, 6 with full recompute, of the tokens'
copies); a pipeline's two point-to-point messages. A ring collective over r cards of n bytes takes
(r − 1)·α + (r − 1)/r·n/β (an all-reduce twice that), α the link's latency and β its bandwidth. The pipeline takes
(M + pp − 1) such slots, so its idle share (the bubble) is (pp − 1)/(M + pp − 1) for 1F1B and GPipe. Then the
data-parallel reduction of the busiest stage's gradients, not overlapped: once per step for ZeRO 0 and 1 (and
MindSpore's level1); ZeRO-2 (level2) reduce-scatters every micro-batch's gradients and ZeRO-3 (level3) also gathers
the weights for every micro-batch's forward and backward, as their memory plan assumes. Nothing overlaps; the
optimizer's update, the data loader and any imbalance between experts are not counted.

Which link a group crosses follows MindSpore's rank order: the pipeline stage outermost (`stage = rank //
stage_device_num`, mindspore/parallel/_parallel_serialization.py), then data parallel, tensor parallel innermost,
rank = (p·dp + d)·tp + t as the series' own scripts number them (notebook 12); expert parallelism is the inner part
of data parallel, d = o·ep + e (MindSpore Transformers' MoE layers shard over (dp // ep, ep, mp)). A group whose
cards share one HCCS domain uses the "intra" link, one that spans a node's HCCS domains (a 910A's two 4-card rings)
the "pcie" link, any other the "inter" link; the slowest group of an axis counts.
"""

from __future__ import annotations

from functools import lru_cache

from helpers.hf_config import ModelShape
from helpers.mesh import Mesh
from helpers.planner.flops import step_flops
from helpers.planner.machine import Machine
from helpers.planner.memory import (
    _check,
    _stage_parameters,
    _stages,
    communication_bytes,
    element_bytes,
    recompute_mode,
    weight_bytes,
    zero_stage,
)

MINDSPORE_ORDER = ("pp", "dp", "tp")        # outermost first: stage = rank // (dp·tp), then d, then t
LINK_ORDER = ("intra", "pcie", "inter")     # from the fastest to the slowest


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


def _link_of(group: tuple[int, ...], node_cards: int, group_cards: int) -> str:
    if len({rank // group_cards for rank in group}) == 1:
        return "intra"
    return "pcie" if len({rank // node_cards for rank in group}) == 1 else "inter"


@lru_cache(maxsize=4096)
def links(cards: int, *, tp: int = 1, pp: int = 1, ep: int | None = None, node_cards: int = 8,
          hccs_cards: int | None = None) -> dict:
    """Which link each group crosses, "intra", "pcie" or "inter" (None without a group), with ranks numbered as
    MindSpore numbers them (module docstring): {"tp", "pp", "dp", "ep", "expert_dp"}, "expert_dp" being the
    dp // ep cards that hold the same experts. `hccs_cards`: cards per HCCS domain (None: the whole node)."""
    dp = cards // (tp * pp)
    ep = ep or 1
    mesh = Mesh({"pp": pp, "dpo": dp // ep, "ep": ep, "tp": tp}, order=("pp", "dpo", "ep", "tp"))
    group_cards = hccs_cards or node_cards

    def worst(*axes: str) -> str | None:
        if all(mesh.degrees[axis] == 1 for axis in axes):
            return None
        groups = {tuple(sorted(mesh.rank({**mesh.coords(r), **dict(zip(axes, combo))})
                               for combo in _combos([mesh.degrees[a] for a in axes])))
                  for r in range(cards)}
        return max((_link_of(g, node_cards, group_cards) for g in groups), key=LINK_ORDER.index)

    return {"tp": worst("tp"), "pp": worst("pp"), "dp": worst("dpo", "ep"), "ep": worst("ep"),
            "expert_dp": worst("dpo") if ep > 1 else None}


def _combos(sizes: list[int]) -> list[tuple[int, ...]]:
    out = [()]
    for size in sizes:
        out = [prefix + (i,) for prefix in out for i in range(size)]
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
    "tokens_per_second_per_card", "days_per_trillion_tokens" (the whole job's), "mfu" (model FLOPs / (step × cards
    × peak)), "links", "sent" (bytes per card and step: communication_bytes' "tp" and "pp", its "dp" but ZeRO-2 and
    -3 per micro-batch (_dp_halves), and "ep")}. Nothing overlaps: the collectives wait for the compute, and the
    compute for them. With `shape` the layers, hidden size and vocabulary default to the config's; without `heads`
    the attention is one flash-attention kernel (helpers.planner.flops)."""
    if shape is not None:
        layers, hidden, vocab = layers or shape.layers, hidden or shape.hidden, vocab or shape.vocab
    _check(params, dp=dp, tp=tp, pp=pp, zero=zero, optimizer_level=optimizer_level, layers=layers, hidden=hidden,
           seq=seq, micro_batch=micro_batch, heads=heads, accumulate=accumulate, vocab=vocab, ep=ep,
           expert_params=expert_params, shape=shape, block="transformer", schedule=schedule)
    hw = machine or Machine()
    mode = recompute_mode(recompute)
    element = element_bytes(precision)
    cards = dp * tp * pp
    where = links(cards, tp=tp, pp=pp, ep=ep, node_cards=hw.node_cards, hccs_cards=hw.hccs_cards)
    link = {"intra": (hw.intra_latency, hw.intra_bandwidth), "pcie": (hw.pcie_latency, hw.pcie_bandwidth),
            "inter": (hw.inter_latency, hw.inter_bandwidth), None: (0.0, 1.0)}
    tokens_mb = seq * micro_batch
    per_mb = step_flops(shape, params=params, layers=layers, hidden=hidden, vocab=vocab, seq=seq,
                        sequences=micro_batch, recompute=mode, flash=heads is None)
    rate = hw.peak_flops * hw.efficiency
    n_layers = layers if layers is not None else 1          # without --layers: the model as one block
    layers_here = n_layers // pp if layers is not None else 1 / pp
    # Forward FLOPs per micro-batch on one card of the first and the last stage (the last adds the output layer).
    stage_forward = {stage: tokens_mb * (layers_here * per_mb["layer"] + (per_mb["output"] if stage != "first" else 0))
                     / tp for stage in _stages(pp)}
    extra_per_layer = per_mb["recompute"] / n_layers / tp
    moe = ep is not None and ep > 1 and shape is not None and shape.experts > 1
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
        if moe:
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
    # over the dp // ep cards that hold the same slice of them; the stage that takes longest counts.
    experts = int(expert_params) if ep is not None else 0
    shares = _stage_parameters(params, tp=tp, pp=pp, layers=layers, hidden=hidden, vocab=vocab, shape=shape,
                               experts=experts, ep=ep)
    halves = _dp_halves(zero_stage(zero, optimizer_level), accumulate)
    replicas = dp // ep if experts else 1
    grad = weight_bytes(precision)                         # a gradient's bytes: 4 under amp, 2 in *-mixed
    seconds["dp"] = max(halves * _ring("all_gather", dp, dense * grad, link[where["dp"]])
                        + halves * _ring("all_gather", replicas, mine * grad, link[where["expert_dp"]])
                        for dense, mine in shares.values())
    step = sum(seconds.values())
    sequences = dp * micro_batch * accumulate
    model_flops = per_mb["model"] * dp * accumulate
    sent = communication_bytes(params, dp=dp, tp=tp, pp=pp, zero=zero, precision=precision, layers=layers,
                               hidden=hidden, seq=seq, micro_batch=micro_batch, accumulate=accumulate,
                               recompute=mode == "full")
    dense, mine = max(shares.values())
    sent["dp"] = halves * ((dp - 1) * dense * grad // dp + ((replicas - 1) * mine * grad // replicas))
    sent["total"] = sent["dp"] + sent["tp"] + sent["pp"]
    sent["ep"] = 0
    if moe:
        held = tokens_mb // (tp if sequence_parallel else 1) * shape.experts_per_token * shape.hidden * element
        sent["ep"] = (6 if mode == "full" else 4) * layers_here * accumulate * (ep - 1) * held // ep
        sent["total"] += sent["ep"]
    per_card = sequences * seq / step / cards
    return {"step_seconds": step, "seconds": seconds, "bubble": (pp - 1) / (accumulate + pp - 1),
            "micro_batches": accumulate, "sequences": sequences, "tokens": sequences * seq, "flops": model_flops,
            "tokens_per_second_per_card": per_card, "days_per_trillion_tokens": 1e12 / (per_card * cards) / 86400,
            "mfu": model_flops / (step * cards * hw.peak_flops), "links": where, "slowest_stage": slowest,
            "sent": sent}
