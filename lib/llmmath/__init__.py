"""llmmath: the shared library of The Roofline Book.

Every formula, catalogue entry, figure and explorer the book uses lives here, in SI units
(seconds, bytes, FLOP, FLOP/s, bytes/s, USD). Convert to human units only for display
(see :mod:`llmmath.units`).
"""

__version__ = "0.1.0"
