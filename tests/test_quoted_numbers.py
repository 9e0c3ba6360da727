"""Every benchmark number quoted in README, docs and the demo matches its results.

README's estimator table says each headline is "one number copied from the
named script's last results in benchmarks/results/"; the user guide quotes
more. When a benchmark is re-run, the quotes must follow. ``QUOTES`` is an
explicit list: where a number is quoted (a file and a regex whose group ``q``
is the number) and where it comes from (a results file and either a markdown
table row and column, or a regex whose group ``r`` is the number). A quote
matches when it is its result rounded to the quote's own decimals ("0.84" for
0.840, "0.0092" for 9.16e-03).

The scan below catches quotes the list misses: a line of README, a docs page
or the demo that names a benchmark script or results file and carries a
decimal number must be covered by a quote on that line, or be listed in
``NOT_QUOTES`` with the reason it is not a results quote.
"""

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NUMBER = r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?"


@dataclass(frozen=True)
class Quote:
    """One quoted number and where its result lives.

    ``row`` (a regex searched in the table rows) and ``column`` (a header
    name) pick a markdown table cell, the first table after a line matching
    ``after``; its first number is the result. Or ``text``: a regex on the
    results file whose group ``r`` is the result.
    """

    source: str
    quote: str
    results: str
    row: str = ""
    column: str = ""
    text: str = ""
    after: str = ""

    def __str__(self):
        return f"{self.source}: /{self.quote}/ <- {self.results}"


def _readme_row(estimator):
    """README's estimator table: the row of ``estimator``, up to the number."""
    return rf"^\| `{estimator}`[^|\n]*\|[^\n]*?"


QUOTES = [
    # README.md, the estimator table's headlines.
    Quote(
        "README.md",
        _readme_row("PrivateCovariance") + rf"Frobenius error (?P<q>{NUMBER})",
        "bench_dly.md",
        row=r"^\| 2 \| 50 \| 4000 \| 1 \| 0\.1 \|",
        column="auto",
    ),
    Quote(
        "README.md",
        _readme_row("TailSensitiveCovariance")
        + rf"relative Frobenius error (?P<q>{NUMBER})",
        "bench_quality.md",
        row=r"^\| digits \(n=1797, d=64\) rho=0\.1 \|",
        column="tail",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateEllipticEnvelope") + rf"ROC AUC (?P<q>{NUMBER})",
        "bench_envelope.md",
        row=r"^\| breast cancer \| private rho=1 \|",
        column="ROC AUC",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateEllipticEnvelope")
        + rf"`EllipticEnvelope`: (?P<q>{NUMBER})",
        "bench_envelope.md",
        row=r"^\| breast cancer \| EllipticEnvelope \(MCD\) \|",
        column="ROC AUC",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateMean") + rf"l2 error (?P<q>{NUMBER})",
        "bench_mean.md",
        row=r"^\| Fig\. 3 vary n \| 50 \| 1000 \| 0\.5 \|",
        column="ours",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateGaussianEstimator") + rf"covariance error (?P<q>{NUMBER})",
        "bench_gaussian.md",
        row=r"^\| 10 \| 8000 \| 0\.5 \|",
        column="cov",
    ),
    Quote(
        "README.md",
        _readme_row("PublicPrivateGMM") + rf"log-likelihood (?P<q>{NUMBER}) nats",
        "bench_gmm.md",
        row=r"^\| PublicPrivateGMM, m=200 \(public x5\) \|",
        column="gap to non-private",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateProductDistribution")
        + rf"Hellinger distance (?P<q>{NUMBER}) times",
        "bench_product.md",
        row=r"^\| sparse U\[0, 2/d\] \| ours \|",
        column="ratio to non-private: median",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateStandardScaler") + rf"mean error (?P<q>{NUMBER})",
        "bench_scaler.md",
        row=r"^\| breast cancer \| 1 \|",
        column="mean error (sds)",
    ),
    Quote(
        "README.md",
        _readme_row("PrivatePCA") + rf"capture (?P<q>{NUMBER})",
        "bench_pca.md",
        after=r"^## digits",
        row=r"^\| 5 \| 1 \|",
        column="tail (default)",
    ),
    Quote(
        "README.md",
        _readme_row("PrivatePCA") + rf"\((?P<q>{NUMBER}) with `method=\"gauss\"`",
        "bench_pca.md",
        after=r"^## digits",
        row=r"^\| 5 \| 1 \|",
        column="auto (= gauss)",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateWhitener") + rf"sqrt\(d\)` (?P<q>{NUMBER})",
        "bench_whitener.md",
        row=r"^\| synthetic d=10, condition 100 \| 1 \|",
        column="private",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateWhitener") + rf"\(exact ZCA (?P<q>{NUMBER})",
        "bench_whitener.md",
        row=r"^\| synthetic d=10, condition 100 \| 1 \|",
        column="exact ZCA",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateWhitener") + rf"unwhitened (?P<q>{NUMBER})",
        "bench_whitener.md",
        row=r"^\| synthetic d=10, condition 100 \| 1 \|",
        column="centered only",
    ),
    Quote(
        "README.md",
        _readme_row("SubsampleAggregate") + rf"`coef_` (?P<q>{NUMBER})",
        "bench_subsample.md",
        text=rf"target, winsorized: median (?P<r>{NUMBER})",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateLinearDiscriminantAnalysis")
        + rf"5-fold accuracy (?P<q>{NUMBER})",
        "bench_discriminant.md",
        row=r"^\| digits \| LDA \| 1 \|",
        column="private accuracy",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateLinearDiscriminantAnalysis")
        + rf"scikit-learn's (?P<q>{NUMBER})",
        "bench_discriminant.md",
        row=r"^\| digits \| LDA \| 1 \|",
        column="scikit-learn",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateLinearRegression") + rf"`coef_` (?P<q>{NUMBER})",
        "bench_linear.md",
        row=r"^\| beta_j = 2\.5, \+-15 \| 10,000 \| pure epsilon 1 \|",
        column="PrivateLinearRegression",
    ),
    Quote(
        "README.md",
        _readme_row("PrivateLinearRegression") + rf"diffprivlib's (?P<q>{NUMBER})",
        "bench_linear.md",
        row=r"^\| beta_j = 2\.5, \+-15 \| 10,000 \| pure epsilon 1 \|",
        column="diffprivlib",
    ),
    # README.md, "What is there".
    Quote(
        "README.md",
        r"^\| `dpgauss\.PrivateLinearRegression` \|[^\n]*?"
        rf"R\^2 (?P<q>{NUMBER}) on randhie",
        "bench_linear.md",
        row=r"^\| randhie \| 20,190, 9 \| [^|]* \| [^|]* \| rho 0\.5 \|",
        column="PrivateLinearRegression (refused)",
    ),
    Quote(
        "README.md",
        r"^\| `dpgauss\.PrivateLinearRegression` \|[^\n]*?"
        rf"and (?P<q>{NUMBER}) on fair",
        "bench_linear.md",
        row=r"^\| fair \| 6,366, 8 \| [^|]* \| [^|]* \| rho 0\.5 \|",
        column="PrivateLinearRegression (refused)",
    ),
    Quote(
        "README.md",
        r"^\| `dpgauss\.SubsampleAggregate` \|[^\n]*?"
        rf"worst of 10 seeds is (?P<q>{NUMBER})",
        "bench_subsample.md",
        text=rf"target, winsorized: median {NUMBER}, worst (?P<r>{NUMBER})",
    ),
    Quote(
        "README.md",
        rf"^\| `dpgauss\.SubsampleAggregate` \|[^\n]*?populous: median (?P<q>{NUMBER})",
        "bench_subsample.md",
        text=rf"target, populous: median (?P<r>{NUMBER})",
    ),
    Quote(
        "README.md",
        rf"^\| `dpgauss\.PrivateProductDistribution` \|[^\n]*?worst of 30 seeds is "
        rf"(?P<q>{NUMBER})x",
        "bench_product.md",
        row=r"^\| sparse U\[0, 2/d\] \| ours \|",
        column="worst",
    ),
    Quote(
        "README.md",
        rf"^\| `dpgauss\.PrivateLinearDiscriminantAnalysis`[^\n]*?rho = 1: LDA "
        rf"(?P<q>{NUMBER})",
        "bench_discriminant.md",
        row=r"^\| breast cancer \| LDA \| 1 \|",
        column="private accuracy",
    ),
    # docs/user_guide/outliers.rst: the breast cancer verdict in words.
    Quote(
        "docs/user_guide/outliers.rst",
        rf"malignant rows with AUC (?P<q>{NUMBER}) against",
        "bench_envelope.md",
        row=r"^\| breast cancer \| private rho=1 \|",
        column="ROC AUC",
    ),
    Quote(
        "docs/user_guide/outliers.rst",
        rf"against the MCD's (?P<q>{NUMBER})",
        "bench_envelope.md",
        row=r"^\| breast cancer \| EllipticEnvelope \(MCD\) \|",
        column="ROC AUC",
    ),
    Quote(
        "docs/user_guide/outliers.rst",
        rf"empirical covariance's (?P<q>{NUMBER})",
        "bench_envelope.md",
        row=r"^\| breast cancer \| EmpiricalCovariance \+ chi2 \|",
        column="ROC AUC",
    ),
    # docs/user_guide/mean.rst: the CoinPress setting of README's headline.
    Quote(
        "docs/user_guide/mean.rst",
        rf"d = 50, n = 1,000, rho = 0\.5: (?P<q>{NUMBER}) against",
        "bench_mean.md",
        row=r"^\| Fig\. 3 vary n \| 50 \| 1000 \| 0\.5 \|",
        column="ours",
    ),
    # docs/user_guide/product.rst: the accuracy table's sparse row.
    *[
        Quote(
            "docs/user_guide/product.rst",
            r"sparse ``U\[0, 2/d\]``" + rf"(?:\s+{NUMBER}){{{i}}}\s+(?P<q>{NUMBER})",
            "bench_product.md",
            row=rf"^\| sparse U\[0, 2/d\] \| {method} \|",
            column="median H",
        )
        for i, method in enumerate(["non-private", "ours"])
    ],
    # docs/user_guide/decomposition.rst: PCA on digits at rho = 1, the whitener.
    *[
        Quote(
            "docs/user_guide/decomposition.rst",
            r"^digits \(/16, B = 8\)\s+0\.1[^\n]*\n"
            + r"digits\s+1\s+"
            + rf"(?:{NUMBER}\s+){{{i}}}(?P<q>{NUMBER})",
            "bench_pca.md",
            after=r"^## digits",
            row=r"^\| 5 \| 1 \|",
            column=column,
        )
        for i, column in enumerate(
            ["tail (default)", "auto (= gauss)", "separate", "eigen (EMCov)", "random"]
        )
    ],
    Quote(
        "docs/user_guide/decomposition.rst",
        rf"private whitener reaches (?P<q>{NUMBER}) at rho = 1",
        "bench_whitener.md",
        row=r"^\| synthetic d=10, condition 100 \| 1 \|",
        column="private",
    ),
    Quote(
        "docs/user_guide/decomposition.rst",
        rf"and (?P<q>{NUMBER})\s+at rho = 10 \(exact",
        "bench_whitener.md",
        row=r"^\| synthetic d=10, condition 100 \| 10 \|",
        column="private",
    ),
    # docs/user_guide/privacy_model.rst: the cost of exact noise.
    Quote(
        "docs/user_guide/privacy_model.rst",
        rf"; (?P<q>{NUMBER})-{NUMBER} times the",
        "bench_scale_exact.md",
        row=r"^\| PrivateCovariance\(epsilon=1\) \|",
        column="exact / float",
    ),
    Quote(
        "docs/user_guide/privacy_model.rst",
        rf"; {NUMBER}-(?P<q>{NUMBER}) times the",
        "bench_scale_exact.md",
        row=r"^\| PrivateCovariance\(method='gauss'\) \|",
        column="exact / float",
    ),
    # docs/user_guide/discriminant_analysis.rst: the accuracy table, and the
    # effect of adaptive clipping at rho = 1.
    *[
        Quote(
            "docs/user_guide/discriminant_analysis.rst",
            rf"^{label}\s+" + rf"(?:{NUMBER}\s+){{{i}}}(?P<q>{NUMBER})",
            "bench_discriminant.md",
            row=rf"^\| {data} \| {model} \| {'1' if rho == 'sk' else rho} \|",
            column="scikit-learn" if rho == "sk" else "private accuracy",
        )
        for label, data, model in [
            ("digits, LDA", "digits", "LDA"),
            ("digits, QDA", "digits", "QDA"),
            ("cancer, LDA", "breast cancer", "LDA"),
            ("cancer, QDA", "breast cancer", "QDA"),
        ]
        for i, rho in enumerate(["0.1", "0.3", "1", "10", "sk"])
    ],
    *[
        Quote(
            "docs/user_guide/discriminant_analysis.rst",
            pattern,
            "bench_discriminant.md",
            row=rf"^\| {data} \| {model} \| 1 \|",
            column="private accuracy",
        )
        for pattern, data, model in [
            (rf"accuracy from (?P<q>{NUMBER}) \(fixed", "digits", "LDA fixed"),
            (rf"clipping\) to (?P<q>{NUMBER}) on digits", "digits", "LDA"),
            (rf"and from (?P<q>{NUMBER}) to", "breast cancer", "LDA fixed"),
            (rf"to (?P<q>{NUMBER}) on breast cancer", "breast cancer", "LDA"),
            (rf"QDA's\s+from (?P<q>{NUMBER})", "digits", "QDA fixed"),
            (rf"QDA's\s+from {NUMBER} to (?P<q>{NUMBER})", "digits", "QDA"),
        ]
    ],
    # docs/user_guide/preprocessing.rst: the scaler's accuracy table and the
    # sentence on breast cancer at rho = 1 above it.
    *[
        Quote(
            "docs/user_guide/preprocessing.rst",
            rf"^{label}\s+{re.escape(rho)}\s+"
            + rf"(?:{NUMBER}\s+){{{i}}}(?P<q>{NUMBER})",
            "bench_scaler.md",
            row=rf"^\| {data} \| {re.escape(rho)} \|",
            column=column,
        )
        for label, data, rhos in [
            ("breast cancer", "breast cancer", ["0.01", "0.1", "1", "10"]),
            ("synthetic, n = 1e5", r"synthetic n=1e5, d=10", ["0.01", "1"]),
        ]
        for rho in rhos
        for i, column in enumerate(["mean error (sds)", "scale factor", "CV accuracy"])
        if not (i == 2 and label.startswith("synthetic"))
    ],
    *[
        Quote(
            "docs/user_guide/preprocessing.rst",
            pattern,
            "bench_scaler.md",
            row=r"^\| breast cancer \| 1 \|",
            column=column,
        )
        for pattern, column in [
            (rf"20 seeds is (?P<q>{NUMBER}) of a", "mean error (sds)"),
            (rf"true sd is\s+(?P<q>{NUMBER}) \(", "scale factor"),
        ]
    ],
]

#: Lines that name a benchmark and carry a decimal number that is not a
#: result quoted from benchmarks/results/ (the number is a setting, or the
#: line points to results quoted elsewhere), with the reason.
NOT_QUOTES = {
    (
        "docs/user_guide/product.rst",
        "(d = 200, n = 20,000, :term:`rho` = 0.5, 30 seeds,",
    ): ("the setting; the table below it is quoted"),
}


def _table_cell(text, quote):
    """The cell of ``quote.column`` in the first table row matching
    ``quote.row`` (after the line matching ``quote.after``)."""
    lines = text.splitlines()
    start = 0
    if quote.after:
        start = next(
            (i for i, line in enumerate(lines) if re.search(quote.after, line)), None
        )
        assert start is not None, f"{quote}: no line matches {quote.after!r}"
    header = None
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if i + 1 < len(lines) and re.match(r"^\|\s*-", lines[i + 1]):
            header = cells
            continue
        if header and quote.column in header and re.search(quote.row, line):
            return cells[header.index(quote.column)]
    raise AssertionError(
        f"{quote}: no row /{quote.row}/ under a column {quote.column!r}"
    )


def _result(quote):
    text = (RESULTS / quote.results).read_text(encoding="utf-8")
    if quote.text:
        found = re.search(quote.text, text, re.MULTILINE)
        assert found, f"{quote}: /{quote.text}/ not found in {quote.results}"
        return found["r"]
    found = re.search(NUMBER, _table_cell(text, quote))
    assert found, f"{quote}: the cell holds no number"
    return found[0]


def _matches(quoted, result):
    """``quoted`` is ``result`` rounded to the quote's decimals."""
    q, r = Decimal(quoted.replace(",", "")), Decimal(result.replace(",", ""))
    unit = Decimal(1).scaleb(q.as_tuple().exponent)
    return abs(q - r) <= unit / 2


def _quoted(quote):
    text = (ROOT / quote.source).read_text(encoding="utf-8")
    found = list(re.finditer(quote.quote, text, re.MULTILINE))
    assert len(found) == 1, (
        f"{quote}: the quote matches {len(found)} times in {quote.source} "
        "(exactly one expected: the quote moved or was reworded)"
    )
    return found[0], text


@pytest.mark.parametrize("quote", QUOTES, ids=str)
def test_quote_matches_its_results(quote):
    found, _ = _quoted(quote)
    result = _result(quote)
    assert _matches(found["q"], result), (
        f"{quote.source} quotes {found['q']} where benchmarks/results/"
        f"{quote.results} now says {result} ({quote}): update the quote"
    )


def _scanned_files():
    yield ROOT / "README.md"
    for page in sorted((ROOT / "docs").rglob("*.rst")):
        if "auto_examples" not in page.parts and page.name != "changelog.rst":
            yield page
    yield from sorted((ROOT / "dpgauss" / "demo").glob("*.py"))


def test_every_quote_near_a_benchmark_is_listed():
    covered = {}
    for quote in QUOTES:
        found, text = _quoted(quote)
        line = text.count("\n", 0, found.start("q"))
        covered.setdefault(quote.source, set()).add(line)
    missed, excused = [], set()
    for path in _scanned_files():
        source = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if not re.search(r"bench_\w+", line) or not re.search(r"\d\.\d", line):
                continue
            if number in covered.get(source, ()):
                continue
            reasons = [key for key in NOT_QUOTES if key[0] == source and key[1] in line]
            if reasons:
                excused.update(reasons)
                continue
            missed.append(f"{source}:{number + 1}: {line[:100]}")
    assert not missed, (
        "lines that name a benchmark and quote a number, not in QUOTES (add the "
        "quote and its results file) nor in NOT_QUOTES:\n" + "\n".join(missed)
    )
    assert excused == set(NOT_QUOTES), (
        f"NOT_QUOTES entries that match no line: {set(NOT_QUOTES) - excused}"
    )


def test_a_drifted_quote_is_caught():
    # The canary: the comparison rejects a quote one unit off in its last
    # place, and accepts the result's rounding.
    assert _matches("0.84", "0.840")
    assert _matches("0.0092", "9.16e-03")
    assert _matches("0.00513", "5.13e-03")
    assert not _matches("0.825", "0.829")
    assert not _matches("0.0091", "9.16e-03")
