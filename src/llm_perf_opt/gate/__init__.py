"""The verification gate (`./dev verify`): the job matrix (`plan`), the verdict per job (`judge`), the pinned
analytic totals (`pins`), JUnit XML (`junit`) and the gate's entry (`run`).

Its data: `verify_config.py` (the `verify` config section, which the trace job's verify stage reads too).
"""
