"""The verification gate (`./dev verify`): the job matrix (`plan`), the verdict per job (`judge`), the pinned
analytic totals (`pins`), JUnit XML (`junit`) and the gate's entry (`run`)."""
