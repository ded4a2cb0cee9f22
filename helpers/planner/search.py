"""Every layout of N cards that fits, fastest estimated step first (notebook 09 introduces the search, notebook 15
ranks it by time).

--search --cards N lists every layout dp × tp × pp = N (each ZeRO stage, with and without full and selective
recompute, each expert-parallel degree of a mixture of experts) that fits, fastest estimated step first, all doing
the same work: a global batch of --global-batch sequences (default: N × --micro-batch × --accumulate, what N
data-parallel cards with --accumulate micro-batches would take), M = global batch / (dp × micro-batch)
micro-batches per data-parallel rank.
"""

from __future__ import annotations

import math

from helpers.mesh import factorizations
from helpers.planner.errors import PlanError
from helpers.planner.machine import GB, USABLE, Machine, card_bytes
from helpers.planner.machine import machine as _machine
from helpers.planner.memory import bytes_per_param, plan
from helpers.planner.timing import step_time


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
            choices = [ep] if dp % ep == 0 else []
        elif shape is not None and shape.experts > 1:
            choices = [None] + [e for e in range(2, shape.experts + 1) if shape.experts % e == 0 and dp % e == 0]
        else:
            choices = [None]
        for expert_parallel in choices:
            yield dp, tp, pp, m, expert_parallel


def search(params: float, cards: int, card: str, *, heads: int | None = None, split: tuple = (),
           global_batch: int | None = None, machine: Machine | None = None, ep: int | None = None,
           expert_params: float = 0, **options) -> list[dict]:
    """Every layout dp × tp × pp = cards, each ZeRO stage, with and without full recompute (and selective
    recompute when it recomputes something: `heads` adds the attention-score term, block "llama" the SwiGLU), each
    expert-parallel degree of a mixture of experts (`shape`, or only `ep` when given), that fits on `card`, fastest
    estimated step first: [{"dp", "tp", "pp", "ep", "zero", "recompute" (True: full), "selective", "micro_batches",
    "total" (= "memory_bytes", the busiest stage's bytes per card), "sent" (bytes per card and step), "bubble" (the
    pipeline's idle share), "step_seconds", "seconds" (step_time's parts), "tokens_per_second_per_card",
    "days_per_trillion_tokens", "mfu", "global_batch"}]. Every layout does the same work: `global_batch`
    sequences per step (default cards × micro_batch × accumulate), M = global_batch / (dp × micro_batch)
    micro-batches per data-parallel rank.
    tp must divide the hidden size, `heads`, every count in `split` and the config's heads, key/value heads and MLP
    width; pp must divide the layers, and a pipeline needs at least pp micro-batches per step (MindSpore:
    micro_batch_num >= stages). `machine`: by default the card's (helpers.planner.machine.machine(card)).
    """
    allowed = USABLE * card_bytes(card)
    hw = machine or _machine(card)
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
    selective = heads or options.get("block") == "llama"     # else selective recomputes nothing
    modes = ("none", "full") + (("selective",) if selective else ())
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
                             time["tokens_per_second_per_card"], "days_per_trillion_tokens":
                             time["days_per_trillion_tokens"], "mfu": time["mfu"], "global_batch": global_batch})
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
    per_param = bytes_per_param(options.get("optimizer", "adam"), options.get("precision", "bf16-mixed"),
                                options.get("master_copy"))
    states = sum(per_param.values()) * params / cards      # ZeRO-3 over all cards, or tp x pp x ZeRO-3: the least
    if states > allowed:
        need = math.ceil(sum(per_param.values()) * params / allowed)
        return (f"the model states alone need {states / GB:.1f} GB per card even sharded over all {cards} cards "
                f"(ZeRO-3, tp, pp): more cards (at least {need} cards), a card with more memory, or a lighter "
                "optimizer (--optimizer); --seq, --micro-batch and --accumulate change only the activations")
    return (f"the model states fit when sharded ({states / GB:.1f} GB per card at best) but not with the "
            "activations: a shorter --seq or a smaller --micro-batch, --heads left out (flash attention), or more "
            "cards; recompute and every ZeRO stage were tried")



def layout_rank(found: list[dict], layout: dict) -> int | None:
    """The place (1 = fastest) of `layout` ({"dp", "tp", "pp"}, and "ep") among the distinct layouts of a search's
    result, each layout at its fastest ZeRO stage and recompute; None when it does not fit."""
    seen = []
    for f in found:
        key = (f["dp"], f["tp"], f["pp"], f["ep"])
        if key not in seen:
            seen.append(key)
    want = (layout["dp"], layout["tp"], layout["pp"], layout.get("ep", 1))
    return seen.index(want) + 1 if want in seen else None


def distinct_layouts(found: list[dict]) -> int:
    """How many distinct dp x tp x pp (x ep) layouts a search's result holds."""
    return len({(f["dp"], f["tp"], f["pp"], f["ep"]) for f in found})
