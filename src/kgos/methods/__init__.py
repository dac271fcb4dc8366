"""Methods layer: the twelve KG-OS query methods (spec/000 section 6), dimensions and analytics.

``QueryMethods`` is mixed into ``kgos.KG`` so every method is available as ``kg.want_to(...)``.
"""

from __future__ import annotations


class QueryMethods:
    """Query methods of a KG; implemented in the modules of this package."""
