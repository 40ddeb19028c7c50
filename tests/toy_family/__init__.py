"""A third model family, in the tests only: a toy vision encoder and a two-layer decoder behind the declared
family contract (`llm_perf_opt.family.ModelFamily`), registered by one line
(`LLM_PERF_OPT_FAMILIES=toy=toy_family.family:FAMILY`, with `tests/` on the path) and no edit anywhere else.
It proves the contract: a family the generic layers have never seen traces, groups, verifies (FLOPs and kernel
counts exact) and reports (tests/floor/test_toy_family.py).

| file | job |
|---|---|
| `spec.py` | the spec (`ToySpec`, named specs), the workload (one fixed square view), the layout, the parts |
| `twin.py` | the torch model: `ToyOCRForCausalLM` (patch conv + projection, embedding, two decoder layers, head) |
| `costs.py` | the cost formulas, registered as `toy.<Class>`, and the analytic model composed from them |
| `runtime.py` | the session, the inputs, the runtime log's hook, the grouping's check |
| `family.py` | `ToyFamily(ModelFamily)` and `FAMILY`, the object the registry line names |
"""
