"""Device policy: Ascend when its cards and CANN are present, else CPU; TUTORIAL_DEVICE, TUTORIAL_WORKERS override."""

import pytest

from helpers import device


def test_cpu_machine_defaults(monkeypatch):
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    monkeypatch.delenv(device.WORKERS_ENV, raising=False)
    monkeypatch.setattr(device, "ascend_card_ids", lambda: [])
    assert device.detect_device() == "CPU"
    assert device.default_workers() == 2


def test_ascend_node_defaults(monkeypatch):
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    monkeypatch.delenv(device.WORKERS_ENV, raising=False)
    monkeypatch.setattr(device, "ascend_card_ids", lambda: list(range(8)))
    monkeypatch.setattr(device, "cann_installed", lambda: True)
    assert device.detect_device() == "Ascend"
    assert device.default_workers() == 8
    monkeypatch.setattr(device, "ascend_card_ids", lambda: [0, 1, 2, 3])
    assert device.default_workers("Ascend") == 4


def test_cards_without_cann_fall_back_to_cpu(monkeypatch):
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    monkeypatch.setattr(device, "ascend_card_ids", lambda: [0])
    monkeypatch.setattr(device, "cann_installed", lambda: False)
    assert device.detect_device() == "CPU"


def test_environment_overrides(monkeypatch):
    monkeypatch.setenv(device.DEVICE_ENV, "ascend")
    monkeypatch.setenv(device.WORKERS_ENV, "3")
    assert device.detect_device() == "Ascend"
    assert device.default_workers() == 3


@pytest.mark.parametrize("bad", ["gpu", "npu0", ""])
def test_unknown_device_is_named(bad):
    with pytest.raises(ValueError, match="unknown device"):
        device.normalize_device(bad)


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_bad_worker_override_is_named(monkeypatch, bad):
    monkeypatch.setenv(device.WORKERS_ENV, bad)
    with pytest.raises(ValueError, match="TUTORIAL_WORKERS"):
        device.default_workers("CPU")

