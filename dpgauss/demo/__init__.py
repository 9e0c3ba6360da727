"""The sections of ``dpgauss demo``, in the order they run, and the demo's
opening and closing.

Each section is a module with ``SECTION`` (the ``section`` of its result rows),
``cost(rhos)`` (the rho its fits charge, given the covariance sweep's budgets)
and ``run(context, note)``, which fits, prints its part of the report to
``context.out``, calls ``note`` with a short progress text as it starts (or, for
the sweep, at each budget) and returns its result rows. ``dpgauss._cli`` runs
them in ``SECTIONS`` order; every fit charges one shared budget, so the order is
part of each fit's noise stream.
"""

import math

from dpgauss import PrivacyBudget, PrivateCovariance
from dpgauss.accounting import ZCDP
from dpgauss.demo import aggregate, covariance, mixture, product, unbounded, workflow
from dpgauss.demo.report import DEMO_DELTA, Context, load_digits_public_scale
from dpgauss.exceptions import BudgetExceededError

__all__ = ["SECTIONS", "finish", "start"]

SECTIONS = (covariance, unbounded, mixture, aggregate, product, workflow)


def start(seed, out, rhos):
    """The context every section reads: the sweep's budgets sorted without
    repeats, the digits, and one budget holding exactly every section's cost.

    The costs are added with ``math.fsum`` (the exact sum, rounded once), so the
    total is the same float however the sections split it.
    """
    rhos = sorted(set(rhos))
    budget = PrivacyBudget(rho=math.fsum(section.cost(rhos) for section in SECTIONS))
    return Context(seed, out, rhos, budget, load_digits_public_scale())


def _in_context(budget, rhos):
    """One line on what the demo's total is, and is not: a sum over many
    demonstration fits, not a budget for one study."""
    fits = len({event.fit for event in budget.ledger()})
    largest = ZCDP(max(rhos))
    return (
        f"In context: this total adds up {fits} independent demonstration fits, "
        f"each at its own rho (the largest, {largest}, is "
        f"epsilon={largest.to_approx(DEMO_DELTA).epsilon:.3g} on its own), on "
        "several unrelated data sets, to show one ledger following them all; it "
        "is not a budget to copy. A real study fixes one total in advance and "
        "spends it on one set of releases: see the tutorial in the documentation "
        "(docs/tutorial.rst)."
    )


def finish(context):
    """Print what the budget spent, its ledger, and a further fit it refuses."""
    budget, out = context.budget, context.out
    X, _, data_norm = context.digits
    spent = budget.spent()
    print(
        f"\nShared budget: spent {spent} over {len(budget.ledger())} releases, i.e. "
        f"{spent.to_approx(DEMO_DELTA)}; remaining {budget.remaining()}.",
        file=out,
    )
    print(_in_context(budget, context.rhos), file=out)
    print("Ledger:\n" + budget.format_ledger(), file=out)
    try:
        PrivateCovariance(rho=0.01, data_norm=data_norm, budget=budget).fit(X)
    except BudgetExceededError as exc:
        print(
            f"\nA further fit is refused before it reads the data:\n  {exc}", file=out
        )
