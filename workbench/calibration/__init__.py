"""Simulation-based calibration of every method on one model, with no reference posterior:
``wb.calibrate(model, ...)`` and ``workbench calibrate FILE:model`` (``sbc.py``). The methods and
the grid of fits are in ``design.py``, the tests of the ranks in ``uniformity.py``, the report
page in ``page.py``; the rank of one fit is ``metrics/calibration.py``'s."""

from .sbc import LEVEL, Calibration, calibrate

__all__ = ["Calibration", "LEVEL", "calibrate"]
