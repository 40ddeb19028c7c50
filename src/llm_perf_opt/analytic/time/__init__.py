"""The time model: how long the analytic costs take on a device, at three levels. Pure Python + numpy: no torch,
no model family (measuring a device and this host needs torch: `measure.calibrate`, `measure.calibrate_levels`).

| file | job |
|---|---|
| `convention.py` | the convention, written once; every prediction, artifact and console table quotes it |
| `hardware.py` | `Hardware` (a datasheet's or a calibration's figures, with sources) and `Roof` (one prediction's) |
| `figures.py` | what the kernel and eager levels need: `DeviceFigures`, `HostFigures`, `TimeModel` |
| `ideal.py` | the ideal level (the roofline): its one formula, `Estimate`, stage and latency predictions |
| `kernel.py` | the kernel level: one kernel's time (`kernel_time`), a census of kernels (`KernelLevel`) |
| `eager.py` | the eager level: + the host's cost per kernel, segments between host syncs (`eager_time`) |
| `levels.py` | the three levels per stage, part and decode step (`LevelTimes`), roofline.json's levels, the table |
| `batch.py` | a stage at batch B (`UnitTable`, `DecodeTable`), the levels at batch B (`BATCH_LEVELS` -> `BatchTimes`) |

The ideal formula is `ideal.compute_seconds` and `ideal.memory_seconds` (numbers or numpy arrays): `ideal.estimate`
(one unit) and `batch.ideal_at_batch` (every unit of a stage at many batches) both call them.

The kernel and eager levels at batch B are the serving engines' (`analytic.serve_engines.timing`): they need the
kernel census at batch B, which a `UnitTable` does not hold, so they run `levels.LevelPredictor` on the family's stage
at batch B; `batch.BATCH_LEVELS` stays the unit-table levels (`ideal`), and `convention.BATCH_LEVELS` holds the texts
of all three. The calibration cache's directory is `config.paths.calibration_dir()`.
"""
