"""A run that would need more memory than the machine has is refused before it starts."""

from __future__ import annotations

import os

from ..errors import WorkbenchError
from ..target import Target


class TooLargeError(WorkbenchError, MemoryError):
    """A run would need more memory than the machine has; raised before any work starts."""


def available_memory() -> int:
    """Bytes of memory available now (Linux's MemAvailable; else the physical total)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return 1 << 62


def check_memory(method, target: Target, needs: dict) -> None:
    """TooLargeError naming each large array and the total, when ``needs`` (name -> bytes)
    adds up to more than 80% of the memory available (a run that swaps or is killed by the
    kernel's OOM killer says nothing useful)."""
    total = sum(needs.values())
    free = available_memory()
    if total <= 0.8 * free:
        return
    parts = ", ".join(f"{name} {nbytes / 1e9:.3g} GB" for name, nbytes in sorted(needs.items(), key=lambda kv: -kv[1]))
    raise TooLargeError(
        f"{method.name} on {target.name!r} (d = {target.dim:,}) would need about {total / 1e9:.3g} GB ({parts}); "
        f"{free / 1e9:.3g} GB are available. Give fewer draws or chains, or a method whose memory grows more "
        "slowly with d (mean-field rather than full-rank)"
    )
