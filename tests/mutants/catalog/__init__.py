"""The catalog: every mutant of the suite, by area. Ids are unique across areas."""

from __future__ import annotations

from ..mutant import Mutant
from . import (
    adoption,
    app,
    bench,
    door,
    faces,
    fleet,
    identity,
    ledger,
    native,
    obligations,
    oracle,
    policy,
    scale,
    standby,
    start,
    web,
)

MUTANTS: tuple[Mutant, ...] = (
    *native.MUTANTS,
    *door.MUTANTS,
    *policy.MUTANTS,
    *ledger.MUTANTS,
    *adoption.MUTANTS,
    *fleet.MUTANTS,
    *app.MUTANTS,
    *identity.MUTANTS,
    *obligations.MUTANTS,
    *oracle.MUTANTS,
    *faces.MUTANTS,
    *web.MUTANTS,
    *scale.MUTANTS,
    *standby.MUTANTS,
    *start.MUTANTS,
    *bench.MUTANTS,
)
