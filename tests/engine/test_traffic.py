"""Each rack uplink carries its own traffic (ECMP flow hashing), not a copy of the rack's."""

from __future__ import annotations

import numpy as np

from simulation.engine import Engine, default_scenario
from simulation.engine.traffic import uplink_utilisation


def _rack(n_cards=24, up=8, load=0.05, links_up=None):
    card_rack = np.zeros(n_cards, dtype=np.int64)
    owner = np.arange(n_cards) % 3  # three jobs share the rack
    loads = np.full(n_cards, load)
    link_rack = np.zeros(up, dtype=np.int64)
    link_up = np.ones(up, dtype=bool) if links_up is None else links_up
    return card_rack, owner, loads, link_rack, link_up, np.array([n_cards]), up


def test_uplinks_of_one_rack_carry_different_loads_with_the_racks_mean():
    args = _rack()
    util = uplink_utilisation(*args)
    assert np.unique(util).size > 1  # not one value copied to every uplink
    # The rack's offered load over its capacity is kept: the mean over its uplinks.
    offered = args[2].sum() / args[5][0]
    assert abs(util.mean() - offered) < 1e-12


def test_a_failed_uplink_carries_nothing_and_its_flows_move_to_the_survivors():
    up = np.ones(8, dtype=bool)
    up[3] = False
    args = _rack(links_up=up)
    util = uplink_utilisation(*args)
    assert util[3] == 0.0
    offered = args[2].sum() / args[5][0] * 8 / 7  # the rack's load over 7 surviving uplinks
    assert abs(util[up].mean() - offered) < 1e-12  # nothing lost below saturation


def test_a_rack_with_every_uplink_down_sends_nothing():
    args = _rack(links_up=np.zeros(8, dtype=bool))
    assert (uplink_utilisation(*args) == 0.0).all()


def test_link_utilisation_in_a_run_differs_between_uplinks_of_a_rack():
    scen = default_scenario(1024, seed=7, n_training_jobs=30, hours=1.0)
    eng = Engine(scen)
    snap = None
    for _ in range(20):
        snap = eng.step()
    util = np.asarray(snap["link_utilization_ratio"], dtype=float)
    per_rack = util.reshape(-1, scen.topology.uplinks_per_rack)
    loaded = per_rack[per_rack.max(axis=1) > 0]
    assert loaded.size, "some rack should carry cross-rack traffic"
    assert (loaded.max(axis=1) > loaded.min(axis=1)).any()
    again = Engine(scen)
    for _ in range(20):
        snap2 = again.step()
    assert np.array_equal(util, np.asarray(snap2["link_utilization_ratio"], dtype=float))
