"""The planner's command line, `python -m helpers.memory` (notebook 09 introduces it; `python -m helpers.planner`
is the same).

    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --optimizer adam --precision bf16-mixed
    python -m helpers.memory --params 7e9 --dp 8 --zero 1 --json
    python -m helpers.memory --config config.json --dp 8 --zero 1 --seq 4096 --card 910B
    python -m helpers.memory --config config.json --seq 4096 --card 910B --search --cards 8
    python -m helpers.memory --config config.json --seq 4096 --card 910B --search --cards 64 --global-batch 256 --json
    python -m helpers.memory --card 910A --constants

--config reads a Hugging Face config.json (helpers.hf_config: llama, mistral, qwen2, qwen3, mixtral, qwen3_moe) for the
parameter count, the layers, hidden size and vocabulary; its heads, key/value heads and MLP width limit tp and its
experts limit ep (add --heads for the attention-score term; left out, the planner assumes flash attention, as
Ascend jobs use), and its activations follow block "llama": grouped key/value heads, the SwiGLU width and the
experts per token. --card 910B | 910A | BYTES gives a verdict, and for 910B and 910A the card's constants for the
time (helpers.planner.machine: the 910B's efficiency fitted on a published row; --constants prints each with its
source); any flag (--peak-flops, --efficiency, --intra-bw, ...) replaces its constant.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from helpers.hf_config import ConfigError, read_config
from helpers.planner.errors import PlanError
from helpers.planner.machine import CARD_MACHINES, GB, MACHINE_FLAGS, Machine, card_bytes, constants, machine
from helpers.planner.memory import COMPONENTS, plan_stages, recompute_mode, verdict
from helpers.planner.search import no_fit_reason, search
from helpers.planner.timing import step_time


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
    parser.add_argument("--optimizer-level",
                        help="instead of --zero: MindSpore's parallel optimizer level1 | level2 | level3")
    parser.add_argument("--optimizer", default="adam", help="sgd | momentum | adam")
    parser.add_argument("--precision", default="bf16-mixed",
                        help="fp32 | fp16-mixed | bf16-mixed | fp16-amp | bf16-amp (the last two: MindSpore amp)")
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
    parser.add_argument("--node-cards", type=_count, help="cards per node (the card's: 8)")
    parser.add_argument("--peak-flops", type=_count, help="a card's peak FLOP/s (the card's; --constants: its source)")
    parser.add_argument("--efficiency", type=_count,
                        help="the share of the peak a step's matrix products reach (910B: fitted on a published row)")
    for where, label in (("intra", "inside an HCCS domain"), ("pcie", "between a 910A node's two HCCS rings"),
                         ("inter", "between nodes")):
        parser.add_argument(f"--{where}-bw", type=_count, help=f"bytes/s per card {label} (assumed unless given)")
        parser.add_argument(f"--{where}-latency", type=_count,
                            help=f"seconds per message {label} (assumed unless given)")
    parser.add_argument("--constants", action="store_true",
                        help="print the machine's constants (with --card: the card's), each with its source")
    parser.add_argument("--json", action="store_true", help="print bytes (and the time) as one JSON object")
    return parser


def _whole(flag: str, value) -> int:
    if value is None or not (value > 0 and float(value).is_integer()):
        raise PlanError(f"{flag}: must be a positive whole number, got {value!r}")
    return int(value)


def _assumptions(hw: Machine) -> str:
    """One sentence naming the constants a time rests on, each with the kind of source it has (--constants: the
    sources themselves), and the flags that replace the ones nothing measured or documented gives."""
    def kind(name: str) -> str:
        source = hw.source(name)
        if source.startswith("fitted"):
            return "fitted on MindSpore Transformers' Llama-2-7B row"
        return source.split(":")[0]

    said = [f"peak {hw.peak_flops / 1e12:.0f} TFLOP/s ({kind('peak_flops')})",
            f"efficiency {hw.efficiency:g} ({kind('efficiency')})",
            f"links {hw.intra_bandwidth / 1e9:g} GB/s inside an HCCS domain of {hw.group_cards}, "
            f"{hw.inter_bandwidth / 1e9:g} GB/s between nodes of {hw.node_cards} ({kind('intra_bandwidth')})"]
    if hw.group_cards != hw.node_cards:
        said.insert(-1, f"{hw.pcie_bandwidth / 1e9:g} GB/s between a node's HCCS rings ({kind('pcie_bandwidth')})")
    assumed = [flag for name, flag in MACHINE_FLAGS.items() if name in hw.assumed
               and not (name.startswith("pcie") and hw.group_cards == hw.node_cards)]
    card = f"{hw.card}: " if hw.card else ""
    return card + "; ".join(said) + (f" (not measured: set {', '.join(assumed)}; --constants: the sources)"
                                     if assumed else "")


def _time_line(time: dict) -> str:
    parts = ", ".join(f"{name} {value:.3g}" for name, value in time["seconds"].items() if value)
    idle = f", pipeline idle {time['bubble']:.0%}" if time["bubble"] else ""
    cards = round(time["tokens"] / time["step_seconds"] / time["tokens_per_second_per_card"])
    return (f"{time['step_seconds']:.3g} s per step ({parts}{idle}), {time['tokens_per_second_per_card']:.0f} "
            f"tokens/s per card, {time['days_per_trillion_tokens']:.3g} days per 10^12 tokens on {cards} cards")


def _print_constants(hw: Machine) -> None:
    print(f"constants of {hw.card or 'the generic example machine'} (helpers.planner.machine):")
    for row in constants(hw):
        value = row["value"]
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {row['constant']:<16}{shown:>10}  {row['source']}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(_negative_values_joined(sys.argv[1:] if argv is None else argv))
    whole = {k: (int(v) if isinstance(v, float) and v > 0 and v.is_integer() else v) for k, v in vars(args).items()}
    def given_machine() -> Machine:
        return machine(args.card if args.card in CARD_MACHINES else None, peak_flops=args.peak_flops,
                       efficiency=args.efficiency, node_cards=args.node_cards, intra_bandwidth=args.intra_bw,
                       intra_latency=args.intra_latency, pcie_bandwidth=args.pcie_bw, pcie_latency=args.pcie_latency,
                       inter_bandwidth=args.inter_bw, inter_latency=args.inter_latency)

    if args.constants:
        try:
            card_bytes(args.card) if args.card else None
            _print_constants(given_machine())
        except PlanError as exc:
            print(f"helpers.memory: {exc}", file=sys.stderr)
            return 2
        return 0
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
        hw = given_machine()
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
            out["tokens_per_second_per_card"] = time["tokens_per_second_per_card"]
            out["time"] = {**time, "machine": {k: v for k, v in asdict(hw).items() if k != "sources"}}
        if layouts is not None:
            out["layouts"] = layouts
        print(json.dumps(layouts if args.search else out))   # --search --json: the list, fastest first
        return 0
    sharding = (f"parallel optimizer {args.optimizer_level}" if args.optimizer_level else f"ZeRO stage {args.zero}")
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
                  f"{f['step_seconds']:.3g} s per step{idle}, {f['tokens_per_second_per_card']:.0f} tokens/s per "
                  f"card, {f['days_per_trillion_tokens']:.3g} days per 10^12 tokens on {whole['cards']} cards, "
                  f"{f['total'] / GB:.1f} GB per card, {f['sent'] / GB:.2f} GB sent per step")
    return 0


