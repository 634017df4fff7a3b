"""A kind snapshot finds where entities sit in it, whatever order its ids are in."""

from __future__ import annotations

import numpy as np

from telemetry.read import KindSnapshot


def test_positions_of_entities_in_and_out_of_a_snapshot():
    snap = KindSnapshot(ids=np.array([40, 10, 30, 20]), values={}, ts=None)
    assert snap.positions(np.array([10, 20, 99, 40, -1, 5])).tolist() == [1, 3, -1, 0, -1, -1]
    empty = KindSnapshot(ids=np.array([], np.int64), values={}, ts=None)
    assert empty.positions(np.array([1, 2])).tolist() == [-1, -1]
    assert snap.positions(np.array([], np.int64)).tolist() == []
