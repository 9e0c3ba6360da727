"""Private linear models (issue 31, in progress: nothing is exported yet)."""

__all__ = []
