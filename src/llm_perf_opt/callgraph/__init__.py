"""Model-agnostic call graphs: TorchLens capture, per-node metadata, schema, grouping, rendering.

Its data in the run: `run_files.py` (the call graph, the grouped graph and its renderings, module_costs.json, the
Model Explorer files), `render_config.py` (the `render` config section), `capture_summary.py` (summary.json's
`trace` and `grouping`).
"""
