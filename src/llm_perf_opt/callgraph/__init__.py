"""Model-agnostic call graphs: the TorchLens capture of a forward, per-node metadata, the schema, the grouping into
`for N` / `parfor N` nodes, costs on the nodes and the renderings. Generic: a model package plugs its runtime checks
and metric tables in; nothing here names a model, and only `torchlens_adapter.py` imports TorchLens.

| file | job |
|---|---|
| `capture.py` | capture a forward with TorchLens and derive the `CallGraph` (`capture_callgraph`) |
| `torchlens_adapter.py` | the one door to TorchLens: its trace call, the private pieces relied on, its printed text |
| `metadata.py` | per-node metadata of a captured forward: constructor params, tensor I/O, activation bytes, params |
| `op_families.py` | which op outputs are new tensors: families of the op names TorchLens records |
| `schema.py` | `CallGraph`: the dynamic call graph of one forward, as one schema-versioned JSON file |
| `grouping.py` | the grouping of a `CallGraph`: `for N` stacks and `parfor N` repeated calls, as a small tree |
| `grouped.py` | the grouped graph's data model (`GroupNode`, `GroupEdge`, `GroupedGraph`) and its file |
| `checks.py` | runtime checks: what a model package plugs into the grouping to compare it with the runtime log |
| `node_costs.py` | costs on the grouped graph: per-module metric tables, attached to every grouped node and variant |
| `heat.py` | the heat map of a grouped graph: the metric that colours the nodes, their share labels, the legend |
| `labels.py` | what a grouped node says on a drawing: pattern, kind, label lines, tooltip, nodes shown at a depth |
| `render.py` | rendering of grouped and raw call graphs: DOT and SVG, Mermaid |
| `dot.py` | DOT sources of grouped and raw call graphs, and `render_dot` (Graphviz's `dot` for SVG/PNG) |
| `mermaid.py` | Mermaid flowcharts of grouped and raw call graphs: ids, quoted labels, heat-map classes, legend |
| `mermaid_check.py` | a structural check of the Mermaid the project writes (the tests run it on every diagram) |
| `model_explorer.py` | the Model Explorer files of a run: grouped graph, every module call, node data per metric |
| `render_config.py` | the `render` config section: how the grouped graph is drawn (depth, formats, heat map) |
| `capture_summary.py` | summary.json's `trace` and `grouping` sections: the capture's statistics, the grouped summary |
| `run_files.py` | this package's run files: the call graph, the grouped graph and renderings, costs, Model Explorer |
"""
