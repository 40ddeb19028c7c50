"""llm-perf-opt: see exactly what DeepSeek-OCR computes.

The package root holds the base layer (plain helpers every layer may import: no torch, no model family), the model
family seam and its registry; each subpackage is one layer or one model family, and imports point down
(`tests/system/test_import_layers.py`).

| file | job |
|---|---|
| `errors.py` | one exception family (`PipelineError`), so anything the user can fix prints one clear line |
| `artifacts.py` | schema-versioned JSON artifacts (`{schema, schema_version, producer, data}`), written atomically |
| `typecheck.py` | the type checker of the typed artifact sections: a section dataclass from a mapping, field by field |
| `run_artifacts.py` | the typed artifacts the jobs themselves write: `summary.json` (`Summary`), `error.json` |
| `run_files.py` | every file a run directory holds: one registry of (role, file, schema, version, loader) |
| `run_lock.py` | a run directory belongs to one process: a lock held for the job's life |
| `units.py` | human-readable numbers, one way everywhere: SI prefixes for FLOPs, bytes, counts and rates; times |
| `quantities.py` | the named time quantities (measured how, predicted at which level) pages and tables label |
| `early_refusal.py` | refusals made on the command line before a job or Hydra is imported (a batch beyond the bound) |
| `lazy.py` | names a package loads on first use (PEP 562), so importing it does not import its heavy submodules |
| `family.py` | the model-family seam: what a model family supplies to the generic layers (`ModelFamily`) |
| `families.py` | the registry of model families: `model.family` -> the family object, named by import string |
| `config/` | typed configuration: one dataclass schema per Hydra config group |
| `callgraph/` | model-agnostic call graphs: capture, metadata, schema, grouping, costs on nodes, renderings |
| `analytic/` | analytic costs (pure formulas, the cost registry), the time model, serving and sizing |
| `measure/` | what a real forward measured (FLOPs, time per module, calibration) against the analytic model |
| `export/` | `torch.export` of submodules: op tables, FLOP and op-count cross-checks, ONNX |
| `report/` | reports from run directories: a multirun's tables and plots, the run page, compare |
| `runs/` | run control: run directories and locks, the job's life, Hydra callbacks and launchers |
| `model_runtime/` | what running any model family needs: loading, session, patches, runtime log, decode, routing |
| `deepseek_ocr_shared/` | what DeepSeek-OCR v1 and 2 share (specs, costs, twin modules); only families import it |
| `dsocr/` | the DeepSeek-OCR (v1) model family |
| `dsocr2/` | the DeepSeek-OCR 2 model family |
| `prepare/` | what every job does first: the configuration checked, the job's model and inputs built |
| `trace/` | the trace job's stages, in order, and the loop that runs them |
| `gate/` | the verification gate (`./dev verify`): a matrix of trace jobs, the verdict, JUnit XML |
| `jobs/` | the entry points: one module per job, and the console script |
"""

__version__ = "0.1.0"
