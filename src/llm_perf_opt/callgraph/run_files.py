"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): the call graph, the grouped graph
and its renderings, the per-module costs on its nodes and the Model Explorer files.

(How such a declaration is found and why it imports nothing else: `llm_perf_opt.run_files`.)
"""

from __future__ import annotations

from llm_perf_opt.run_files import RunFile

RUN_FILES: tuple[RunFile, ...] = (
    RunFile(
        "callgraph",
        "callgraph.json",
        "callgraph.capture",
        "the TorchLens call graph with per-module metadata",
        "llm_perf_opt.callgraph",
        3,
        (1, 2, 3),
        "llm_perf_opt.callgraph.schema:load_callgraph_json",
    ),
    RunFile(
        "grouped",
        "callgraph.grouped.json",
        "callgraph.grouping (data model: callgraph.grouped)",
        "the Option C grouped graph (for N / parfor N)",
        "llm_perf_opt.callgraph.grouped",
        2,
        (1, 2),
        "llm_perf_opt.callgraph.grouped:load_grouped_json",
    ),
    RunFile("grouped_dot", "callgraph.grouped.dot", "callgraph.render", "the grouped graph in DOT"),
    RunFile("grouped_svg", "callgraph.grouped.svg", "callgraph.render", "the grouped graph drawn by Graphviz"),
    RunFile("grouped_mmd", "callgraph.grouped.mmd", "callgraph.render", "the grouped graph in Mermaid"),
    RunFile(
        "module_costs",
        "module_costs.json",
        "trace.graph",
        "per-module metric tables (analytic, measured, observed, predicted) that the graph's nodes sum",
        "llm_perf_opt.module_costs",
        1,
        (1,),
        "llm_perf_opt.callgraph.node_costs:load_module_costs",
    ),
    RunFile(
        "model_explorer",
        "model_explorer/graph.json",
        "callgraph.model_explorer",
        "the grouped graph for Model Explorer (./dev explore RUN_DIR), node data beside it",
    ),
    RunFile(
        "model_explorer_raw",
        "model_explorer/raw.json",
        "callgraph.model_explorer",
        "every module call for Model Explorer (the ungrouped graph), node data beside it",
    ),
)
