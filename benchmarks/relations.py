"""The relation kind's parts of the generated family (:func:`families.relation_point`).

A keyword view beside relation views (links between samples): the kind of a 3-class set of
papers where the best mode fell below the paper mode. Each part is fixed with its seeds;
``python benchmarks/family_sweep.py --part relation-design`` runs one.
"""

from __future__ import annotations

from families import FamilyPoint, relation_point


def _part(first_seed: int, rows: tuple) -> list[FamilyPoint]:
    """Points ``(n, k, signal, ((degree, homophily), ...), sizes)``, seeded in turn."""
    return [relation_point(n, k, s, links, sizes, seed=first_seed + i)
            for i, (n, k, s, links, sizes) in enumerate(rows)]


#: The design part: explored and chosen on.
RELATION_DESIGN_POINTS = _part(500, (
    (3000, 3, 0.25, ((2, 0.7), (60, 0.4)), "balanced"),
    (3000, 3, 0.0, ((3, 0.6), (80, 0.38)), "skewed"),
    (2000, 4, 0.25, ((3, 0.5), (40, 0.35)), "balanced"),
    (2000, 5, 0.5, ((2, 0.8), (60, 0.3)), "skewed"),
    (1500, 3, 0.0, ((4, 0.5),), "balanced"),
    (2500, 6, 0.25, ((3, 0.6), (50, 0.25)), "balanced"),
    (3000, 4, 0.125, ((2, 0.9), (100, 0.33)), "skewed"),
    (1200, 8, 0.25, ((5, 0.5), (30, 0.3)), "balanced")))
#: Written down before any choice made on the design part was run on them.
RELATION_CONFIRMATION_POINTS = _part(600, (
    (2500, 3, 0.125, ((3, 0.7), (70, 0.36)), "skewed"),
    (3000, 5, 0.25, ((2, 0.85), (50, 0.3)), "balanced"),
    (1800, 4, 0.0, ((5, 0.6), (40, 0.4)), "skewed"),
    (2200, 6, 0.375, ((2, 0.7), (80, 0.3)), "skewed"),
    (1000, 3, 0.25, ((6, 0.45),), "balanced"),
    (3000, 3, 0.0, ((4, 0.8), (120, 0.36)), "balanced"),
    (2000, 8, 0.125, ((3, 0.6), (40, 0.2)), "skewed"),
    (1500, 5, 0.25, ((4, 0.5), (25, 0.35)), "balanced")))
#: A second, written down after the first had been seen (for the margin of the narrow cuts).
RELATION_CONFIRMATION_POINTS_2 = _part(700, (
    (3000, 4, 0.0, ((3, 0.75), (90, 0.35)), "skewed"),
    (2500, 5, 0.25, ((4, 0.6), (60, 0.3)), "skewed"),
    (2000, 3, 0.375, ((2, 0.8), (50, 0.4)), "skewed"),
    (3000, 6, 0.125, ((3, 0.7), (40, 0.3)), "balanced"),
    (1500, 4, 0.25, ((5, 0.55), (30, 0.35)), "skewed"),
    (2500, 3, 0.125, ((2, 0.9), (100, 0.37)), "balanced"),
    (3000, 7, 0.25, ((3, 0.65), (70, 0.25)), "skewed"),
    (1200, 3, 0.0, ((3, 0.7), (40, 0.45)), "skewed")))

PARTS = {"relation-design": RELATION_DESIGN_POINTS,
         "relation-confirmation": RELATION_CONFIRMATION_POINTS,
         "relation-confirmation-2": RELATION_CONFIRMATION_POINTS_2}
