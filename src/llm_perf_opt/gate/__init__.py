"""The verification gate (`./dev verify`): a matrix of trace jobs run as one multirun, judged from the run directories'
artifacts, with JUnit XML and an exit status for CI. Above the trace stages; below the jobs.

| file | job |
|---|---|
| `plan.py` | what `./dev verify` will run: the matrix chosen with `verify=NAME`, expanded and checked first |
| `judge.py` | the verdict on a finished sweep: what failed, one line each |
| `pins.py` | the pinned analytic totals of the gate: `conf/verify/expected.yaml` |
| `junit.py` | JUnit XML for CI systems: one test case per job of a verification sweep |
| `page.py` | the gate's own page, `verify.html`: the verdict, the failing rows, the jobs, the pinned totals |
| `run.py` | `./dev verify [verify=NAME] [overrides]`: the gate's entry |
| `verify_config.py` | the `verify` config section: the trace job's verification knobs and the gate's matrix |
| `junit.xsd` | the JUnit subset written, as an XML schema: a test validates every file the gate writes against it |
"""
