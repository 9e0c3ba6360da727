"""numpydoc validation of every public object, and the release list of estimators."""

import importlib
import inspect
import re

import numpy as np
import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

PUBLIC_MODULES = [
    "dpgauss",
    "dpgauss.model_selection",
    "dpgauss.base",
    "dpgauss.testing.discovery",
    "dpgauss.accounting",
    "dpgauss.covariance",
    "dpgauss.mechanisms",
    "dpgauss.utils",
    "dpgauss.testing.audit",
    "dpgauss.testing.estimator_checks",
    "dpgauss.utils.validation",
]

# Ignored numpydoc codes, as in scikit-learn's own docstring test:
IGNORED = {
    "GL01",  # summary may start on the line of the opening quotes
    "GL02",  # closing quotes may follow text
    "ES01",  # an extended summary is optional
    "SA01",  # a See Also section is optional
    "EX01",  # Examples are required on classes and functions, not on methods
    "RT02",  # the type alone may name a single return value
    "SS05",  # summaries may start with "Return"
    "SS06",  # a summary may wrap onto a second line
    "PR02",  # dataclass fields are documented as Attributes
}


def _public_objects():
    seen = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                qual = f"{obj.__module__}.{obj.__qualname__}"
                seen.setdefault(qual, obj)
                if inspect.isclass(obj):
                    for meth_name, meth in vars(obj).items():
                        if meth_name.startswith("_") or not callable(meth):
                            continue
                        seen.setdefault(f"{qual}.{meth_name}", meth)
    return sorted(seen)


@pytest.mark.parametrize("qualname", _public_objects())
def test_docstring(qualname):
    result = numpydoc_validate.validate(qualname)
    errors = [
        (code, msg)
        for code, msg in result["errors"]
        if code not in IGNORED and not (code == "EX01" and "." in qualname)
    ]
    assert not errors, "\n".join(f"{code}: {msg}" for code, msg in errors)


def test_classes_and_functions_have_examples():
    for qualname in _public_objects():
        obj = numpydoc_validate.Validator._load_obj(qualname)
        if inspect.isclass(obj) or (
            inspect.isfunction(obj) and qualname.count(".") <= 3
        ):
            doc = inspect.getdoc(obj) or ""
            if "Examples" not in doc and inspect.isclass(obj):
                if obj.__module__.startswith("dpgauss.exceptions"):
                    continue
                pytest.fail(f"{qualname} has no Examples section")


def test_estimators_state_their_privacy_in_notes():
    from dpgauss import (
        PrivateCovariance,
        PrivateEllipticEnvelope,
        PrivatePCA,
        PrivateStandardScaler,
        PrivateWhitener,
        TailSensitiveCovariance,
    )

    for cls in [
        PrivateCovariance,
        PrivateEllipticEnvelope,
        PrivatePCA,
        PrivateStandardScaler,
        PrivateWhitener,
        TailSensitiveCovariance,
    ]:
        notes = inspect.getdoc(cls).split("Notes\n-----", 1)[1]
        assert "**Privacy.**" in notes
        for phrase in ("replacing one row", "public", "zCDP"):
            assert phrase in notes, f"{cls.__name__} Notes do not mention {phrase!r}"


@pytest.mark.parametrize(
    "name",
    [
        "PrivateCovariance",
        "PrivateEllipticEnvelope",
        "PrivatePCA",
        "PrivateWhitener",
        "TailSensitiveCovariance",
    ],
)
def test_documented_attributes_are_the_fitted_ones(name):
    # The Attributes section is the list of releases: nothing more is stored.
    import dpgauss

    cls = getattr(dpgauss, name)
    X = np.random.default_rng(0).normal(size=(30, 3))
    est = cls(rho=1.0, data_norm=3.0).fit(X)
    doc = inspect.getdoc(cls)
    section = doc.split("Attributes\n----------", 1)[1].split("See Also", 1)[0]
    documented = set(re.findall(r"^(\w+_) :", section, flags=re.M))
    fitted = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    assert fitted == documented - {"feature_names_in_"}
