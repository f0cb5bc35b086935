"""Implementation of :mod:`fuzzkern.strategies`; import from the facade, not from here."""
