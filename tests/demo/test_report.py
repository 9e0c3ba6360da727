"""The shared rows and the figure writer."""

import pytest

from dpgauss.demo.report import ROW_FIELDS, plot_sweep, row


def test_every_row_has_the_same_keys(demo_run):
    assert all(tuple(result) == ROW_FIELDS for result in demo_run.rows)


@pytest.mark.parametrize(("name", "magic"), [("f.svg", b"<?xml"), ("f.PDF", b"%PDF")])
def test_plot_format_follows_the_extension(tmp_path, name, magic):
    pytest.importorskip("matplotlib")
    rows = [
        row("covariance", label, rho, "m", error, None, 2 * rho, 0.1)
        for label, errors in (("A", (0.5, 0.2)), ("B", (0.9, 0.4)))
        for rho, error in zip((0.1, 1.0), errors, strict=True)
    ]
    rows.append(row("gaussian", "C", 0.5, "m", 0.1, 0.1, 1.0, 0.1))
    plot_sweep(rows, tmp_path / name)
    assert (tmp_path / name).read_bytes().startswith(magic)
