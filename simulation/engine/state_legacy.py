"""Format 1 reader (zlib(pickle), written before 2026-11): an unpickler that admits only the
globals an engine state of that format contains."""

from __future__ import annotations

import pickle
from typing import Any


def _classes() -> dict[str, type]:
    from .memory.cache import LRUCache, LRUKCache

    return {"LRUCache": LRUCache, "LRUKCache": LRUKCache}


class LegacyUnpickler(pickle.Unpickler):
    """Format 1 reader: only the globals an engine state of that format contains."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "dtype"),
        ("numpy.random._pickle", "__randomstate_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pcg64", "PCG64"),
        ("numpy.random.bit_generator", "SeedSequence"),
        ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
        ("random", "Random"),
        ("collections", "OrderedDict"),
        ("copyreg", "_reconstructor"),
        ("builtins", "object"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        if module.endswith("engine.memory.cache") and name in _classes():
            return _classes()[name]
        raise ValueError(
            f"state: format 1 data names {module}.{name}, which an engine state never holds; "
            "reset the run"
        )
