"""helpers.memory against the ZeRO paper's figures, its JSON shape, and its named errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.memory import GB, PlanError, plan

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("stage, expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, expected_gb):
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters, 64-way data parallel, mixed-precision Adam (K = 12)."""
    result = plan(7.5e9, dp=64, zero=stage, optimizer="adam", precision="fp16-mixed")
    model_states = result["params"] + result["grads"] + result["optimizer"]
    assert round(model_states / GB, 1) == expected_gb
    assert result["activations"] == 0 and result["total"] == model_states


def test_bytes_per_parameter():
    assert plan(1000, optimizer="adam", precision="bf16-mixed")["total"] == 16 * 1000      # 2 + 2 + 12
    assert plan(1000, optimizer="adam", precision="fp32")["total"] == 16 * 1000            # 4 + 4 + 8
    assert plan(1000, optimizer="momentum", precision="fp32")["optimizer"] == 4 * 1000
    assert plan(1000, optimizer="sgd", precision="fp32")["optimizer"] == 0
    assert plan(1000, optimizer="sgd", precision="fp16-mixed")["optimizer"] == 4 * 1000   # the master copy
    assert plan(8000, tp=2, pp=2)["params"] == 2 * 2000
    assert plan(1001, dp=4, zero=1, precision="fp32")["optimizer"] == 8 * 251             # a padded shard


def test_activations():
    full = plan(1, layers=2, hidden=8, seq=4, micro_batch=2, precision="bf16-mixed")["activations"]
    assert full == 2 * 4 * 2 * 8 * 34
    assert plan(1, layers=2, hidden=8, seq=4, micro_batch=2, tp=2)["activations"] == full // 2
    recomputed = plan(1, layers=2, hidden=8, seq=4, micro_batch=2, recompute=True)["activations"]
    assert recomputed == 2 * (2 * 4 * 2 * 8) + full // 2
    mlp = plan(1, layers=3, hidden=4, micro_batch=10, precision="fp32", block="mlp")["activations"]
    assert mlp == 4 * 10 * 4 * (3 * 5 + 8)
    assert plan(1, layers=4, hidden=8, seq=4, pp=2, accumulate=4)["activations"] == full   # 1F1B: pp in flight


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers.memory", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_prints_each_component_in_gb():
    result = run_cli("--params", "7e9", "--dp", "8", "--zero", "1", "--optimizer", "adam", "--precision", "bf16-mixed")
    assert result.returncode == 0, result.stderr
    for name in ("params", "grads", "optimizer", "activations", "total"):
        assert name in result.stdout
    assert "14.000 GB" in result.stdout and "38.500 GB" in result.stdout   # 2Ψ; 2Ψ + 2Ψ + 12Ψ/8


def test_cli_json():
    result = run_cli("--params", "7.5e9", "--dp", "64", "--zero", "2", "--precision", "fp16-mixed", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["params", "grads", "optimizer", "activations", "total"]
    assert all(isinstance(v, int) for v in data.values())
    assert round(data["total"] / GB, 1) == 16.6


@pytest.mark.parametrize("args, flag", [
    (("--params", "0"), "--params"),
    (("--params", "-7e9"), "--params"),
    (("--params", "1e9", "--dp", "0"), "--dp"),
    (("--params", "1e9", "--tp", "-2"), "--tp"),
    (("--params", "1e9", "--zero", "4"), "--zero"),
    (("--params", "1e9", "--optimizer", "lamb"), "--optimizer"),
    (("--params", "1e9", "--precision", "fp8"), "--precision"),
    (("--params", "1e9", "--layers", "30", "--hidden", "4096", "--pp", "4"), "--pp"),
    (("--params", "1e9", "--layers", "32", "--hidden", "4096", "--tp", "3"), "--tp"),
    (("--params", "1e9", "--layers", "32", "--hidden", "4096", "--block", "rnn"), "--block"),
    (("--params", "seven"), "--params"),
    (("--params", "1e9", "--layers", "32"), "--layers"),
])
def test_cli_bad_input_names_the_flag(args, flag):
    result = run_cli(*args)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], result.stderr


def test_plan_raises_named_errors():
    with pytest.raises(PlanError, match="--dp"):
        plan(1e9, dp=0)
    with pytest.raises(PlanError, match="--optimizer"):
        plan(1e9, optimizer="adagrad")


def test_mindspore_optimizer_levels_shard_what_the_hsdp_docstring_says():
    level1 = plan(8e9, dp=8, optimizer="adam", precision="fp32", optimizer_level="level1")
    assert (level1["params"], level1["grads"], level1["optimizer"]) == (4e9, 32e9, 8e9), "weights and state sharded"
    zero1 = plan(8e9, dp=8, optimizer="adam", precision="fp32", zero=1)
    assert level1["params"] < zero1["params"] and level1["grads"] == zero1["grads"], "level1 is not ZeRO-1"
    for level in ("level2", "level3"):
        assert plan(8e9, dp=8, optimizer_level=level) == plan(8e9, dp=8, zero=3)
    with pytest.raises(PlanError, match="--optimizer-level: must be level1, level2 or level3"):
        plan(8e9, dp=8, optimizer_level="1")
    with pytest.raises(PlanError, match="give it or --zero, not both"):
        plan(8e9, dp=8, zero=1, optimizer_level="level1")
