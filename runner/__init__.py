"""Optimas runner: the profile -> analyze -> prompt -> evaluate pipeline (knows nothing of GitHub)."""

__version__ = "0.1.0"
