"""Discovery of dpgauss's public estimators (for tests and documentation)."""

import importlib
import inspect
import pkgutil

__all__ = ["all_estimators"]


def all_estimators():
    """Return every public dpgauss estimator class, sorted by name.

    An estimator is a class exported in a public module's ``__all__`` that
    derives from :class:`~dpgauss.base.PrivateEstimatorMixin` and scikit-learn's
    ``BaseEstimator``. Tests use this list, so a new estimator is checked
    without being added to any test file.

    Returns
    -------
    list of (str, type)
        ``(name, class)`` pairs.

    Examples
    --------
    >>> from dpgauss.testing.discovery import all_estimators
    >>> for name, _ in all_estimators():
    ...     print(name)
    PrivateBounds
    PrivateCovariance
    PrivateEllipticEnvelope
    PrivateGaussianEstimator
    PrivateLinearDiscriminantAnalysis
    PrivateLinearRegression
    PrivateMean
    PrivatePCA
    PrivateProductDistribution
    PrivateQuadraticDiscriminantAnalysis
    PrivateStandardScaler
    PrivateWhitener
    PublicPrivateGMM
    SubsampleAggregate
    TailSensitiveCovariance
    """
    from sklearn.base import BaseEstimator

    import dpgauss
    from dpgauss.base import PrivateEstimatorMixin

    found = {}
    for info in pkgutil.walk_packages(dpgauss.__path__, "dpgauss."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if (
                inspect.isclass(obj)
                and issubclass(obj, PrivateEstimatorMixin)
                and issubclass(obj, BaseEstimator)
                and not inspect.isabstract(obj)
            ):
                found[name] = obj
    return sorted(found.items())
