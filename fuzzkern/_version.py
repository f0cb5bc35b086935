"""fuzzkern's version, on the lowest floor so that any stage can record it (corpus entries,
reports) without importing the package's front door."""

__version__ = "0.1.0"
