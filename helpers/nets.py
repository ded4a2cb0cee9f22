"""The networks of the series. Introduced in notebook 01 (SimpleNet) and 04 (MLP).

SimpleNet is the article's network, unchanged: 32 -> 64 -> ReLU -> 10.
"""

from __future__ import annotations

import mindspore.nn as nn


class SimpleNet(nn.Cell):
    """The article's network: Dense(32, 64) -> ReLU -> Dense(64, 10)."""

    def __init__(self, features: int = 32, hidden: int = 64, classes: int = 10):
        super().__init__()
        self.fc1 = nn.Dense(features, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(hidden, classes)

    def construct(self, x):
        x = self.fc1(x)
        x = self.relu(x)
        return self.fc2(x)


class MLP(nn.Cell):
    """A wider two-layer perceptron (e.g. 1024 -> 4096 -> 1024): many parameters, so much to AllReduce."""

    def __init__(self, features: int = 1024, hidden: int = 4096, classes: int = 1024):
        super().__init__()
        self.fc1 = nn.Dense(features, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(hidden, classes)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class SmallConvNet(nn.Cell):
    """Compute-heavy, parameter-light: two 3x3 convolutions on 3x32x32 inputs (~10 k parameters).

    Lots of arithmetic per sample, little to AllReduce: the network that scales best across ranks.
    """

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
