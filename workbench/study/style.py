"""One colour and marker per method, the same on every page and figure.

Colours are fixed by the method's name, not by its position in a table (a table without an
``Exact`` row must not shift everyone's colour). The palette is Okabe and Ito's (2008)
colour-universal design set, extended with Paul Tol's colourblind-safe "muted" colours;
``Exact`` and the truth are black. A label that names a variant of a known method
("NUTS (target_accept=0.95)") keeps the method's colour and gets a dashed line and its own
marker; any other label gets a colour from the spare set by a stable hash of its text.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple


class Style(NamedTuple):
    colour: str
    marker: str
    linestyle: str = "-"


TRUTH_COLOUR = "#000000"

METHOD_STYLES = {
    "Exact": Style("#000000", "o", "--"),
    "NUTS": Style("#0072B2", "o"),
    "HMC": Style("#56B4E9", "s"),
    "RandomWalkMH": Style("#E69F00", "^"),
    "IndependenceMH": Style("#999933", "v"),
    "ImportanceSampling": Style("#D55E00", "D"),
    "RejectionSampling": Style("#CC79A7", "P"),
    "Laplace": Style("#009E73", "X"),
    "NN4Post": Style("#882255", "*"),
    "MeanFieldVI": Style("#44AA99", "h"),
    "Pathfinder": Style("#332288", "<"),
    "FullRankVI": Style("#117733", ">"),
    "SMC": Style("#AA4499", "p"),
    "MAMS": Style("#CC6677", "d"),
    "MCLMC": Style("#888888", "8"),
    "DADVI": Style("#DDCC77", "H"),
    "BatchAndMatch": Style("#661100", "+"),
    "GMMVI": Style("#EE3377", "x"),
}

# short names some studies use for a method in their tables
ALIASES = {"RWM": "RandomWalkMH", "IS": "ImportanceSampling", "IMH": "IndependenceMH", "MFVI": "MeanFieldVI"}

_SPARE_COLOURS = ("#88CCEE", "#6699CC", "#4477AA", "#EE6677", "#CCBB44", "#AA3377", "#BBBBBB")
_SPARE_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p")


# the families the index's verdict map and the legends group methods by
FAMILIES = {
    "MCMC": ("NUTS", "HMC", "MAMS", "MCLMC", "RandomWalkMH", "IndependenceMH"),
    "VI": ("Laplace", "Pathfinder", "MeanFieldVI", "FullRankVI", "DADVI", "BatchAndMatch", "NN4Post", "GMMVI"),
    "importance and SMC": ("ImportanceSampling", "RejectionSampling", "SMC"),
}
# light fills for table cells (dark text stays readable on them), one per family
FAMILY_FILLS = {"MCMC": "#cfe3f5", "VI": "#d5efd9", "importance and SMC": "#fbe3cc", "other": "#eeeeee"}


def base_method(label: str) -> str | None:
    """The method a table label names ("NUTS (low_rank)" -> "NUTS", "IS" -> "ImportanceSampling"),
    or None for a label that names none."""
    if label in METHOD_STYLES:
        return label
    if label in ALIASES:
        return ALIASES[label]
    names = list(METHOD_STYLES) + list(ALIASES)
    base = max((name for name in names if label.startswith(name)), key=len, default=None)
    return None if base is None else ALIASES.get(base, base)


def method_family(label: str) -> str:
    """"MCMC", "VI", "importance and SMC", or "other" (Exact, a label that names no method)."""
    base = base_method(label)
    return next((family for family, names in FAMILIES.items() if base in names), "other")


def _stable_index(text: str, n: int) -> int:
    return zlib.crc32(text.encode()) % n  # Python's hash() changes between processes


def method_style(label: str) -> Style:
    """The style of a table's method label (a method name, or a variant of one)."""
    if label in METHOD_STYLES or label in ALIASES:
        return METHOD_STYLES[ALIASES.get(label, label)]
    base = base_method(label)
    marker = _SPARE_MARKERS[_stable_index(label, len(_SPARE_MARKERS))]
    if base is not None:
        return Style(METHOD_STYLES[base].colour, marker, "--")
    return Style(_SPARE_COLOURS[_stable_index(label, len(_SPARE_COLOURS))], marker)


def method_styles(labels) -> dict[str, Style]:
    """label -> style for every label of one figure. Labels that are not methods (an
    ablation's "box" and "modes") take the next free spare colour if theirs is taken."""
    labels = list(dict.fromkeys(labels))
    styles = {label: method_style(label) for label in labels}
    taken = {s.colour for label, s in styles.items() if label in METHOD_STYLES or label in ALIASES}
    for label in sorted(labels):  # sorted: the outcome does not depend on the table's order
        s = styles[label]
        if label in METHOD_STYLES or label in ALIASES or s.linestyle == "--":
            continue
        k = _SPARE_COLOURS.index(s.colour)
        for j in range(len(_SPARE_COLOURS)):
            colour = _SPARE_COLOURS[(k + j) % len(_SPARE_COLOURS)]
            if colour not in taken:
                break
        styles[label] = s._replace(colour=colour)
        taken.add(colour)
    return styles


def method_colours(labels) -> dict[str, str]:
    """label -> colour for every label of one figure."""
    return {label: s.colour for label, s in method_styles(labels).items()}
