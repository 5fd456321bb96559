"""Checks of a method's settings and seed, each a ``ValueError`` that names the setting and
what it must be."""

from __future__ import annotations

import dataclasses
import math

import numpy as np


def resolve_seed(seed) -> int:
    """The seed to use and record: the given one, or fresh entropy when None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def check_positive_int(name: str, value, minimum: int = 1) -> None:
    """ValueError naming the setting unless ``value`` is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_positive(name: str, value, *, allow_none: bool = False) -> None:
    """ValueError naming the setting unless ``value`` is a finite number > 0."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0{' (or None)' if allow_none else ''}, got {value!r}")


_KINDS = {  # a setting's annotation -> (accepts(value), what it must be)
    "int": (lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)), "an integer"),
    "float": (lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)),
              "a number"),
    "bool": (lambda v: isinstance(v, (bool, np.bool_)), "True or False"),
}  # (``str`` settings are choices: each method checks them against its list and names it)


def check_setting_types(method) -> None:
    """ValueError naming the setting when a value has the wrong type for its annotation
    (``int``, ``float``, ``bool``, each optionally ``| None``): without this a string
    where a number belongs fails later as "'<' not supported between 'float' and 'str'"."""
    for f in dataclasses.fields(method):
        kinds = [k.strip() for k in str(f.type).split("|")]
        value = getattr(method, f.name)
        if value is None and "None" in kinds:
            continue
        known = [k for k in kinds if k in _KINDS]
        if not known or len(known) != len([k for k in kinds if k != "None"]):
            continue  # Any, unions with other types: the method checks those itself
        if not any(_KINDS[k][0](value) for k in known):
            what = " or ".join(_KINDS[k][1] for k in known) + (" (or None)" if "None" in kinds else "")
            raise ValueError(f"{type(method).__name__}: {f.name} must be {what}, got {value!r} ({type(value).__name__})")
