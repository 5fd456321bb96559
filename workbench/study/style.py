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

from ..methods import METHODS
from ..running.method import declared_methods


class Style(NamedTuple):
    colour: str
    marker: str
    linestyle: str = "-"


TRUTH_COLOUR = "#000000"

# each built-in method's style, as its class declares it (``colour``, ``marker``, ``linestyle``)
METHOD_STYLES = {name: Style(cls.colour, cls.marker, cls.linestyle) for name, cls in METHODS.items()}

# short names some studies use for a method in their tables
ALIASES = {"RWM": "RandomWalkMH", "IS": "ImportanceSampling", "IMH": "IndependenceMH", "MFVI": "MeanFieldVI"}

_SPARE_COLOURS = ("#88CCEE", "#6699CC", "#4477AA", "#EE6677", "#CCBB44", "#AA3377", "#BBBBBB")
_SPARE_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p")


# the families the index's verdict map and the legends group methods by, as each method declares
# its own (``Method.family``; Exact's "reference" is no family: "other")
FAMILIES = {family: tuple(name for name, cls in METHODS.items() if cls.family == family)
            for family in ("MCMC", "VI", "importance and SMC")}
# light fills for table cells (dark text stays readable on them), one per family
FAMILY_FILLS = {"MCMC": "#cfe3f5", "VI": "#d5efd9", "importance and SMC": "#fbe3cc", "other": "#eeeeee"}


def _declared_styles() -> dict[str, Style]:
    """The built-in styles and those of a user's methods that declare theirs (``Method.colour``)."""
    own = {cls.__name__: Style(cls.colour, cls.marker, cls.linestyle) for cls in declared_methods()
           if cls.__name__ not in METHOD_STYLES and cls.colour}
    return {**METHOD_STYLES, **own}


def base_method(label: str) -> str | None:
    """The method a table label names ("NUTS (low_rank)" -> "NUTS", "IS" -> "ImportanceSampling"),
    or None for a label that names none."""
    styles = _declared_styles()
    if label in styles:
        return label
    if label in ALIASES:
        return ALIASES[label]
    names = list(styles) + list(ALIASES)
    base = max((name for name in names if label.startswith(name)), key=len, default=None)
    return None if base is None else ALIASES.get(base, base)


def method_family(label: str) -> str:
    """"MCMC", "VI", "importance and SMC" (as the method's class declares), or "other" (Exact,
    a label that names no method)."""
    base = base_method(label)
    declared = {cls.__name__: cls.family for cls in declared_methods()}
    family = declared.get(base, "other")
    return family if family in FAMILIES else "other"


def _stable_index(text: str, n: int) -> int:
    return zlib.crc32(text.encode()) % n  # Python's hash() changes between processes


def method_style(label: str) -> Style:
    """The style of a table's method label (a method name, or a variant of one)."""
    styles = _declared_styles()
    if label in styles or label in ALIASES:
        return styles[ALIASES.get(label, label)]
    base = base_method(label)
    marker = _SPARE_MARKERS[_stable_index(label, len(_SPARE_MARKERS))]
    if base is not None:
        return Style(styles[base].colour, marker, "--")
    return Style(_SPARE_COLOURS[_stable_index(label, len(_SPARE_COLOURS))], marker)


def method_styles(labels) -> dict[str, Style]:
    """label -> style for every label of one figure. Labels that are not methods (an
    ablation's "box" and "modes") take the next free spare colour if theirs is taken."""
    labels = list(dict.fromkeys(labels))
    styles = {label: method_style(label) for label in labels}
    known = _declared_styles()
    taken = {s.colour for label, s in styles.items() if label in known or label in ALIASES}
    for label in sorted(labels):  # sorted: the outcome does not depend on the table's order
        s = styles[label]
        if label in known or label in ALIASES or s.linestyle == "--":
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
