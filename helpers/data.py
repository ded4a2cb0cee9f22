"""Synthetic, learnable datasets and their sharding across ranks. Introduced in notebook 01/03.

The article trains on random labels (`np.random.randint`), which no network can learn: the loss
can only wander around ln(10). Here the labels come from a fixed random "teacher" (the arg-max of a
linear map of the features), so the loss really goes down and ranks can be compared.
"""

from __future__ import annotations

import numpy as np

FEATURES = 32   # the article's SimpleNet input width
CLASSES = 10    # and its number of classes
TEACHER_SEED = 1234


def make_arrays(samples: int, seed: int = 0, shape: tuple[int, ...] = (FEATURES,), classes: int = CLASSES):
    """(data float32 [samples, *shape], label int32 [samples]) with learnable labels.

    The same `seed` gives the same arrays on every rank: sharding, not the generator, decides who
    sees which sample.
    """
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((samples, *shape)).astype(np.float32)
    features = int(np.prod(shape))
    teacher = np.random.default_rng(TEACHER_SEED).standard_normal((features, classes)).astype(np.float32)
    label = np.argmax(data.reshape(samples, features) @ teacher, axis=1).astype(np.int32)
    return data, label


def sharded_dataset(data, label, batch_size: int, rank: int = 0, world: int = 1,
                    shuffle: bool = True, with_index: bool = False, drop_remainder: bool = True):
    """A `NumpySlicesDataset` holding this rank's shard, batched.

    This is the corrected form of the article's step 3: a dict of equal-length arrays is sliced
    row by row, and `num_shards`/`shard_id` hand each rank a disjoint part. With `with_index`, an
    "index" column carries each sample's position so a rank can record exactly what it read.
    Shuffling is seeded by `mindspore.dataset.config.set_seed`, which must be equal on all ranks.
    """
    import mindspore.dataset as ds

    columns = {"data": data, "label": label}
    if with_index:
        columns["index"] = np.arange(len(label), dtype=np.int32)
    dataset = ds.NumpySlicesDataset(columns, shuffle=shuffle, num_shards=world, shard_id=rank)
    return dataset.batch(batch_size, drop_remainder=drop_remainder)
