"""What threads.py and conv_step.py need: notebook 04's conv net and a way to pin a process to one core.

SmallConvNet is the `conv` network of notebook 04's scripts/scaling.py (two 3x3 convolutions on 3x32x32
inputs, ~10 k parameters: a lot of arithmetic, little to AllReduce). pin_to_core sets the CPU affinity
of every thread that exists now, as the series' old workers did after `init()`; the launcher now pins
each rank from its start instead (taskset, like `msrun --bind_core`).
"""

from __future__ import annotations

import os

import mindspore.nn as nn


class SmallConvNet(nn.Cell):
    def __init__(self, channels: int = 32, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, pad_mode="same")
        self.conv2 = nn.Conv2d(channels, channels, 3, pad_mode="same")
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(channels, classes)

    def construct(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        return self.fc(self.flatten(self.pool(x)))


def pin_to_core(core: int) -> int:
    """Pin every thread of this process (and so every thread it starts later) to one CPU core; returns it."""
    tids = [int(t) for t in os.listdir("/proc/self/task")] if os.path.isdir("/proc/self/task") else [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, {core})
        except OSError:  # a thread that has just exited
            pass
    return core
