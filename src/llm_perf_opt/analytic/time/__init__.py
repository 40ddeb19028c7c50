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

Where the next levels go: the serving engines' kernel and eager levels at batch B are new entries of
`batch.BATCH_LEVELS` (a function of a `UnitTable`, the batches, the roof and the MoE shape, returning `BatchTimes`),
each with its text in `convention.BATCH_LEVELS`; `ideal` is the only one today, and `batch.level_times` refuses any
other by name. The calibration cache's directory is `config.paths.calibration_dir()`.
"""
