"""Card power, temperature and facility energy (plausible shapes, not calibrated).

Board power = idle + (TDP - idle) x activity with activity = 0.5 x busy + 0.5 x min(1, FLOPs
utilization / 0.5) (memory-bound decode draws less than dense training), with 1% noise;
temperature relaxes towards inlet + 0.06 C/W x power with a 120 s time constant and is read
through a sensor with 0.3 C noise. Energy is facility energy (IT power x PUE).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import Mechanism

if TYPE_CHECKING:  # annotations only
    from ..catalog import HardwareSpec

WATTS_TO_CELSIUS = 0.06
TIME_CONSTANT_S = 120.0


class Thermals(Mechanism):
    """Card temperatures (state) and the energy counter; power is an output of each step."""

    STATE = ("temperature",)
    COUNTERS = {"energy_joules": 0.0}

    def __init__(self, n_cards: int, inlet_celsius: float) -> None:
        self.temperature = np.full(n_cards, inlet_celsius + 5.0, dtype=np.float32)
        self._new_counters()

    def bind(self, hw: HardwareSpec, inlet_celsius: float, pue: float) -> None:
        """Bind the hardware's power envelope, the inlet temperature and the PUE."""
        self.hw, self.inlet, self.pue = hw, inlet_celsius, pue

    def step(
        self,
        dt: float,
        util: np.ndarray,
        flops_util: np.ndarray,
        healthy: np.ndarray,
        rng: np.random.Generator,
    ) -> dict[str, np.ndarray | float]:
        """Advance temperatures and energy by ``dt``; returns the step's power and readings."""
        hw = self.hw
        activity = np.clip(0.5 * util + 0.5 * np.minimum(1.0, flops_util / 0.5), 0.0, 1.0)
        power = hw.idle_watts + (hw.tdp_watts - hw.idle_watts) * activity
        power = power * (1.0 + rng.normal(0.0, 0.01, power.size))
        power = np.where(healthy, power, 0.0)
        target = self.inlet + WATTS_TO_CELSIUS * power
        alpha = 1.0 - np.exp(-dt / TIME_CONSTANT_S)
        self.temperature += (alpha * (target - self.temperature)).astype(np.float32)
        reading = self.temperature + rng.normal(0.0, 0.3, power.size).astype(np.float32)
        it_power = float(power.sum())
        self.counters["energy_joules"] += it_power * self.pue * dt
        return {"power": power, "temperature": reading, "it_power": it_power}

    def check(self) -> None:
        """Temperatures are finite and between the inlet and the hottest steady state."""
        t = self.temperature
        hottest = self.inlet + WATTS_TO_CELSIUS * self.hw.tdp_watts * 1.05 + 5.0
        if not np.isfinite(t).all() or t.min() < self.inlet - 1e-3 or t.max() > hottest:
            self.fail("a card temperature is outside [inlet, hottest steady state]")
