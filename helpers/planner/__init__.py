"""The planner: bytes per card and time per step for training a model on Ascend cards, arithmetic only (notebook 09
introduces it, notebook 13 adds experts, notebook 15 the time and the published recipes, notebook 16 runs its pick).

Its parts, each a module with its own sources in its docstring:

- machine: the cards (910B, 910A), their nodes and links, every constant with its source or the word "assumed";
- memory: model states (the ZeRO paper), activations (Korthikanti et al.), pipeline stages, MindSpore's parallel
  optimizer levels, a verdict per card;
- flops: a step's FLOPs, counted as MindSpore counts them;
- timing: a step's time for one layout, groups laid out in MindSpore's rank order;
- search: every layout of N cards that fits, fastest first;
- recipes: MindSpore Transformers' published throughput against the planner's prediction, and the calibration;
- cli: `python -m helpers.memory` (or `python -m helpers.planner`).

`helpers.memory` re-exports all of it under its old name.
"""

from helpers.planner.errors import PlanError
from helpers.planner.flops import step_flops
from helpers.planner.machine import (
    CARD_MACHINES,
    CARDS,
    EFFICIENCY_910B,
    GB,
    MACHINE_FLAGS,
    USABLE,
    Machine,
    card_bytes,
    constants,
    machine,
)
from helpers.planner.memory import (
    BLOCKS,
    COMPONENTS,
    OPTIMIZER_LEVELS,
    OPTIMIZER_SLOTS,
    PRECISIONS,
    RECOMPUTE,
    SCHEDULES,
    activation_bytes,
    bytes_per_param,
    communication_bytes,
    element_bytes,
    llama_layer_units,
    plan,
    plan_stages,
    recompute_mode,
    verdict,
    weight_bytes,
    zero_stage,
)
from helpers.planner.search import distinct_layouts, layout_rank, no_fit_reason, search
from helpers.planner.timing import MINDSPORE_ORDER, links, step_time

# The generic example machine's values under their old names (notebook 15 cites PEAK_FLOPS_ASSUMED).
PEAK_FLOPS_ASSUMED = Machine().peak_flops
EFFICIENCY_ASSUMED = Machine().efficiency
NODE_CARDS = Machine().node_cards
LINKS = {"intra": (Machine().intra_latency, Machine().intra_bandwidth),
         "inter": (Machine().inter_latency, Machine().inter_bandwidth)}

__all__ = [
    "BLOCKS", "CARDS", "CARD_MACHINES", "COMPONENTS", "EFFICIENCY_910B", "EFFICIENCY_ASSUMED", "GB", "LINKS",
    "MACHINE_FLAGS", "MINDSPORE_ORDER", "Machine", "NODE_CARDS", "OPTIMIZER_LEVELS", "OPTIMIZER_SLOTS",
    "PEAK_FLOPS_ASSUMED", "PRECISIONS", "PlanError", "RECOMPUTE", "SCHEDULES", "USABLE", "activation_bytes",
    "bytes_per_param", "card_bytes", "communication_bytes", "constants", "distinct_layouts", "element_bytes",
    "layout_rank", "links", "llama_layer_units", "machine", "no_fit_reason", "plan", "plan_stages",
    "recompute_mode", "search", "step_flops", "step_time", "verdict", "weight_bytes", "zero_stage",
]
