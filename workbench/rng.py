"""Standard normal draws inside kernels, from the chain's own ``np.random.Generator``.

Numba's ``Generator.standard_normal()`` is NumPy's ziggurat (Marsaglia & Tsang 2000, as in
``numpy/random/src/distributions/distributions.c``). Compiled by Numba, the random sign bit
becomes a branch that the processor mispredicts half the time: measured here 9.4 ns per draw,
against 4.0 ns for the same algorithm with the sign read from a table of signed layer widths
(a multiplication by +-1 was turned back into a branch where the function was inlined), and
2.2 ns for the 64 random bits alone. That difference matters where normals are a large share of the
work: the momentum of HMC and NUTS (d normals per transition, as much as a 100-d Gaussian
target's gradient costs for several leapfrog steps) and the reparameterised draws of VI.
Fill arrays with :func:`fill_standard_normal`: passing the Generator to a function once per
draw makes Numba count references to it with atomic operations, which doubles the cost.

:func:`standard_normal` below is that same ziggurat on the same bit stream, so it returns
*bit-identical* values to ``rng.standard_normal()`` and leaves the generator in the same
state (``tests/unit/test_rng.py`` checks both, including the rare tail and wedge paths); only the
fast path's sign is branch-free. It reads the bit generator through Numba's own bindings;
should a Numba release move them, it falls back to ``rng.standard_normal()`` (slower, same
values).
"""

from __future__ import annotations

import math

import numpy as np

from .jit import jit

try:  # Numba's bindings to the bit generator and NumPy's ziggurat tables (numba >= 0.56)
    from numba.np.random._constants import fi_double, ki_double, wi_double, ziggurat_nor_inv_r, ziggurat_nor_r
    from numba.np.random.generator_core import next_double, next_uint64

    FAST_NORMALS = True
    _SIGNED_WI = np.concatenate([wi_double, -wi_double])  # entry idx + 256 sign: (-1)^sign wi[idx]
except ImportError:  # pragma: no cover - depends on the installed Numba
    FAST_NORMALS = False


if FAST_NORMALS:

    @jit
    def _ziggurat(bitgen):
        """One N(0, 1) draw from a bit generator (``rng.bit_generator``), as NumPy draws it."""
        while True:
            r = next_uint64(bitgen)
            idx = r & 0xFF
            r >>= 8
            sign = r & 0x1
            rabs = (r >> 1) & 0x000FFFFFFFFFFFFF
            # rabs < 2^52: the signed conversion is exact (and cheaper than the unsigned one);
            # the sign comes with the table entry, so no branch (or select) depends on it
            x = float(np.int64(rabs)) * _SIGNED_WI[idx + (sign << 8)]
            if rabs < ki_double[idx]:  # 99% of draws: inside the ziggurat's rectangles
                return x
            if idx == 0:  # the tail beyond r
                while True:
                    xx = -ziggurat_nor_inv_r * math.log1p(-next_double(bitgen))
                    yy = -math.log1p(-next_double(bitgen))
                    if yy + yy > xx * xx:
                        if (rabs >> 8) & 0x1:
                            return -(ziggurat_nor_r + xx)
                        return ziggurat_nor_r + xx
            elif (fi_double[idx - 1] - fi_double[idx]) * next_double(bitgen) + fi_double[idx] < math.exp(
                -0.5 * x * x
            ):  # a wedge
                return x

    @jit
    def standard_normal(rng):
        """One N(0, 1) draw from ``rng``: equal to ``rng.standard_normal()``, faster."""
        return _ziggurat(rng.bit_generator)

    @jit
    def fill_standard_normal(rng, out):
        """Fills the 1-D array ``out`` with N(0, 1) draws, as ``rng.standard_normal(out=out)``."""
        # the bit generator is taken out once: passing the Generator itself on every call
        # makes Numba count references to it (atomic operations, as costly as the draw)
        bitgen = rng.bit_generator
        for i in range(out.size):
            out[i] = _ziggurat(bitgen)

else:  # pragma: no cover

    @jit
    def standard_normal(rng):
        """One N(0, 1) draw from ``rng`` (Numba's own ziggurat)."""
        return rng.standard_normal()

    @jit
    def fill_standard_normal(rng, out):
        """Fills the 1-D array ``out`` with N(0, 1) draws."""
        for i in range(out.size):
            out[i] = rng.standard_normal()


def chain_rngs(seed: int, n: int) -> list[np.random.Generator]:
    """One independent generator per chain (or restart, or path), derived from ``seed`` with
    ``SeedSequence.spawn``: a run's draws do not depend on how its work is scheduled."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]
