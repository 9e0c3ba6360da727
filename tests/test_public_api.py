"""The public API: importable ``__all__`` without duplicates (ruff's RUF022
keeps each ``__all__`` sorted)."""

import importlib

import pytest

MODULES = [
    "dpgauss",
    "dpgauss.model_selection",
    "dpgauss.base",
    "dpgauss.testing.discovery",
    "dpgauss.accounting",
    "dpgauss.covariance",
    "dpgauss.decomposition",
    "dpgauss.gaussian",
    "dpgauss.mixture",
    "dpgauss.preprocessing",
    "dpgauss.product",
    "dpgauss.exceptions",
    "dpgauss.mechanisms",
    "dpgauss.utils",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_importable(name):
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is listed but missing"


def test_top_level_names():
    import dpgauss

    assert set(dpgauss.__all__) == {
        "PrivacyBudget",
        "PrivateBounds",
        "PrivateCovariance",
        "PrivateEllipticEnvelope",
        "PrivateGaussianEstimator",
        "PrivateLinearDiscriminantAnalysis",
        "PrivateLinearRegression",
        "PrivateMean",
        "PrivatePCA",
        "PrivateProductDistribution",
        "PrivateQuadraticDiscriminantAnalysis",
        "PrivateStandardScaler",
        "PrivateWhitener",
        "PublicPrivateGMM",
        "SubsampleAggregate",
        "TailSensitiveCovariance",
        "__version__",
    }
