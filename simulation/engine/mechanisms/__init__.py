"""The engine's mechanisms, each owning its slice of the mutable state.

Like SimPy's resources and Vidur's replica schedulers, every mechanism holds its own arrays,
changes them only through its methods (``allocate`` / ``release`` assert their bounds), has a
``check()`` of its invariants that tests call after any step, and lists the fields it saves
(``STATE``). The engine composes them in :meth:`..engine.Engine.step`:

* :class:`.cards.CardPool` - card ownership and health;
* :class:`.services.Services` - replicas, traffic shares, backlog and serving counters;
* :class:`.jobs.Jobs` - training job lifecycle, progress and checkpoints;
* :class:`.memory.MemoryPool` - prefix caches (HBM and DRAM tiers) and the hit-ratio estimate;
* :class:`.faults.FaultState` - card failure timers, rack uplinks, reroutes;
* :class:`.thermals.Thermals` - card temperature and facility energy.

Static tables (topology, job and service tables, hardware) are not state: the engine binds
them to the mechanisms after construction or loading (``bind``).
"""

from .base import InvariantError, Mechanism
from .cards import CardPool
from .faults import FaultState
from .jobs import Jobs
from .memory import MemoryPool
from .services import Services
from .thermals import Thermals

__all__ = [
    "CardPool",
    "FaultState",
    "InvariantError",
    "Jobs",
    "Mechanism",
    "MemoryPool",
    "Services",
    "Thermals",
]
