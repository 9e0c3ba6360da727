"""Private versions of non-private estimators: subsample and aggregate."""

from dpgauss.ensemble._subsample import SubsampleAggregate

__all__ = ["SubsampleAggregate"]
