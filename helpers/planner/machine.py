"""The machine a plan runs on: each card's memory and peak, its node, its links, each constant with its source or
the word "assumed" (notebook 09 introduces the cards, notebook 15 the rest).

A constant here is a value and where it comes from. Only the card's memory, the node's shape and the 910A's
4-card HCCS rings are in Huawei's documents. The peak is a press figure. The 910B's efficiency is fitted on one
published row (helpers.planner.recipes). The links are assumptions: measure yours (notebook 15, section 6:
hccl_test and the conversion from its figures) and pass --intra-bw, --intra-latency, --inter-bw, --inter-latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from helpers.planner.errors import PlanError

GB = 1e9
USABLE = 0.9            # the share of a card the planner lets a plan fill (the rest: runtime, workspace, buffers)

PRESS_910 = ("press: Huawei's figure for the Ascend 910 at its launch, 256 TFLOP/s in float16 (2019-08-23; "
             "https://pureai.com/articles/2019/09/03/nws-huawei-ascend-910-processor.aspx)")
MINDCLUSTER_AFFINITY = ("https://www.hiascend.com/document/detail/en/mindcluster/730/clustersched/schedulingug/"
                        "dl_affinity_0002.html")
CANN_TF_CONSTRAINTS = "https://hiascend.com/document/detail/zh/canncommercial/700/modeldev/tfmigr1/tfmigr1_000026.html"
DEPLOYER_PORTS = "https://www.hiascend.com/document/detail/zh/mindcluster/730/deployer/deployerug/deployer_0025.html"

SOURCES_910B = {
    "memory": "Huawei, Atlas 800T A2 training server: 64 GB of HBM per NPU",
    "peak_flops": PRESS_910 + "; no Huawei document found gives the 910B's peak (third-party figures for its "
                  "variants differ), and only peak x efficiency enters a step's time, so the fit absorbs the choice",
    "efficiency": "fitted: the share of this peak that makes the planner reproduce MindSpore Transformers' "
                  "Llama-2-7B row (4160 tokens/s per card, 8 x Atlas 800T A2; helpers.planner.recipes.calibrate)",
    "node_cards": f"Huawei: 8 NPUs per Atlas 800T A2, each with its own RoCE port ({DEPLOYER_PORTS})",
    "hccs_cards": "assumed: the node's 8 NPUs share one HCCS domain (MindCluster's affinity guide names smaller HCCS "
                  f"groups for the 910A and the Atlas 200T A2 Box16, none for this server: {MINDCLUSTER_AFFINITY})",
    "intra_latency": "assumed: 10 us per ring step over HCCS (measure: hccl_test, notebook 15 section 6)",
    "intra_bandwidth": "assumed: 100 GB/s per card over HCCS, as a ring collective sees it",
    "pcie_latency": "unused: one HCCS domain per node",
    "pcie_bandwidth": "unused: one HCCS domain per node",
    "inter_latency": "assumed: 20 us per ring step over RoCE",
    "inter_bandwidth": "assumed: 25 GB/s per card between nodes, a 200 Gb/s port's worth (the port speed is not in a "
                       "Huawei document found)",
}
SOURCES_910A = {
    "memory": "Huawei, Atlas 300T Training Card Technical White Paper (Model 9000): 32 GB of HBM",
    "peak_flops": PRESS_910,
    "efficiency": "assumed: the 910B's fitted efficiency; MindSpore Transformers publishes no 910A row",
    "node_cards": "Huawei: 8 cards per Atlas 800 training server (model 9000), 1/2/4/8 per job "
                  f"({CANN_TF_CONSTRAINTS})",
    "hccs_cards": "Huawei: two HCCS rings of 4, cards 0-3 and 4-7, joined by PCIe (MindCluster: \"Four Ascend AI "
                  f"processors are interconnected through HCCS, and Ascend AI processors in HCCS rings are "
                  f"interconnected through PCIe\", {MINDCLUSTER_AFFINITY}; CANN: \"0-3卡和4-7卡各为一个组网\", "
                  f"{CANN_TF_CONSTRAINTS})",
    "intra_latency": "assumed: 10 us per ring step over HCCS",
    "intra_bandwidth": "assumed: 30 GB/s per card over HCCS, one 240 Gb/s HCCS port's worth (press: three such "
                       "ports per chip, Huawei at Hot Chips 2019, as reported)",
    "pcie_latency": "assumed: 10 us per ring step over PCIe",
    "pcie_bandwidth": "assumed: 16 GB/s per card between the two rings, half a PCIe 4.0 x16 link (press: \"PCIe "
                      "4.0\", Huawei's Atlas 900 launch, 2019)",
    "inter_latency": "assumed: 20 us per ring step over RoCE",
    "inter_bandwidth": "assumed: 12.5 GB/s per card between nodes, a 100 Gb/s port's worth (press: \"100G RoCE\", "
                       "Huawei's Atlas 900 launch, 2019)",
}
GENERIC_SOURCE = "assumed: an example value, not a measurement; set it with its flag"


@dataclass(frozen=True)
class Machine:
    """What a step's time depends on besides the model: a card's peak FLOP/s, the share of it a step reaches, the
    cards per node and per HCCS group, and each link's latency (s) and bandwidth (bytes/s, per card, as a ring
    collective sees it): "intra" inside an HCCS group, "pcie" between the HCCS groups of one node (a 910A's two
    rings), "inter" between nodes. `card` names the card whose constants these are (None: generic examples);
    `sources` says where each constant comes from; `assumed` names the ones no document or measurement gives."""
    peak_flops: float = 256e12
    efficiency: float = 0.5
    node_cards: int = 8
    hccs_cards: int | None = None        # None: the whole node
    intra_latency: float = 10e-6
    intra_bandwidth: float = 100e9
    pcie_latency: float = 10e-6
    pcie_bandwidth: float = 16e9
    inter_latency: float = 20e-6
    inter_bandwidth: float = 25e9
    card: str | None = None
    sources: dict = field(default_factory=dict, compare=False)
    assumed: tuple = ("peak_flops", "efficiency", "intra_latency", "intra_bandwidth", "inter_latency",
                      "inter_bandwidth")

    @property
    def group_cards(self) -> int:
        """Cards that share one HCCS domain."""
        return self.hccs_cards or self.node_cards

    def source(self, name: str) -> str:
        """Where constant `name` comes from: the card's source, "given" (a flag set it), or an example's note."""
        if name in self.sources:
            return self.sources[name]
        return GENERIC_SOURCE if self.card is None or name in self.assumed else "given"


MACHINE_FLAGS = {"peak_flops": "--peak-flops", "efficiency": "--efficiency", "node_cards": "--node-cards",
                 "intra_latency": "--intra-latency", "intra_bandwidth": "--intra-bw",
                 "pcie_latency": "--pcie-latency", "pcie_bandwidth": "--pcie-bw",
                 "inter_latency": "--inter-latency", "inter_bandwidth": "--inter-bw"}

# The 910B's efficiency, fitted once on MindSpore Transformers' Llama-2-7B row by helpers.planner.recipes.calibrate();
# tests/test_planner_recipes.py fits it again and fails when this constant no longer matches the planner.
EFFICIENCY_910B = 0.772


def _card_machines() -> dict[str, Machine]:
    def assumed(sources):
        return tuple(name for name, text in sources.items() if text.startswith(("assumed", "press")))

    b910 = Machine(peak_flops=256e12, efficiency=EFFICIENCY_910B, node_cards=8, hccs_cards=8, card="910B",
                   sources={k: v for k, v in SOURCES_910B.items() if k != "memory"},
                   assumed=assumed(SOURCES_910B))
    a910 = Machine(peak_flops=256e12, efficiency=EFFICIENCY_910B, node_cards=8, hccs_cards=4, intra_bandwidth=30e9,
                   pcie_bandwidth=16e9, inter_bandwidth=12.5e9, card="910A",
                   sources={k: v for k, v in SOURCES_910A.items() if k != "memory"}, assumed=assumed(SOURCES_910A))
    return {"910B": b910, "910A": a910}


CARD_MACHINES = _card_machines()
CARDS = {"910B": 64 * GB, "910A": 32 * GB}          # HBM per card, GB = 10^9 bytes (below the cards' 64 and 32 GiB)
CARD_SOURCES = {"910B": SOURCES_910B, "910A": SOURCES_910A}


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


def machine(card: str | None = None, **given) -> Machine:
    """The Machine of `card` (910B, 910A: their constants with sources; anything else or None: generic examples),
    with the given fields (None: the card's) checked and put in; a given field is no longer assumed."""
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
    base = CARD_MACHINES.get(card, Machine())
    if "node_cards" in given:
        given["node_cards"] = int(given["node_cards"])
        if base.group_cards < base.node_cards and given["node_cards"] % base.group_cards:
            raise PlanError(f"--node-cards: a {card} node is made of HCCS rings of {base.group_cards} cards, so "
                            f"{given['node_cards']} cards a node cannot be modelled; give a multiple of "
                            f"{base.group_cards}")
        if base.group_cards == base.node_cards:
            given["hccs_cards"] = None       # one HCCS domain: the whole node, whatever its size
    sources = {**base.sources, **{name: "given" for name in given if name in MACHINE_FLAGS}}
    return replace(base, **given, sources=sources,
                   assumed=tuple(name for name in base.assumed if name not in given))


def constants(hw: Machine) -> list[dict]:
    """Every constant of `hw` with its value and source, in the order a reader meets them (notebook 15)."""
    names = ("peak_flops", "efficiency", "node_cards", "hccs_cards", "intra_latency", "intra_bandwidth",
             "pcie_latency", "pcie_bandwidth", "inter_latency", "inter_bandwidth")
    rows = []
    if hw.card in CARD_SOURCES:
        rows.append({"constant": "memory", "value": CARDS[hw.card], "source": CARD_SOURCES[hw.card]["memory"]})
    for name in names:
        if name.startswith("pcie") and hw.group_cards == hw.node_cards:
            continue
        value = hw.group_cards if name == "hccs_cards" else getattr(hw, name)
        rows.append({"constant": name, "value": value, "source": hw.source(name)})
    return rows
