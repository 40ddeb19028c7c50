"""What running any model family needs, whatever the model: loading, the session, runtime patches and their log,
the greedy decode loop, the measured forward, the MoE routing record. Generic: no module here imports a family.

| file | job |
|---|---|
| `session.py` | `Session`: open (device, dtype, attention, process state, a family's loader), run, describe |
| `loading.py` | `LoadedModel`: what a loader hands the session |
| `vendor.py` | a vendor directory's code: checked (config, transformers version, required names), imported, built |
| `config_json.py` | a vendor `config.json` read as a dict (no torch) |
| `random_weights.py` | the one seeding rule: meta-built Linear/Embedding weights filled with seeded normals |
| `attention.py` | the attention-implementation rule (eager, sdpa, flash_attention_2) |
| `process_state.py` | the process-wide state loading may change, snapshotted and restored |
| `torchvision_stand_in.py` | a minimal torchvision in `sys.modules` while vendor code imports (CPU torch) |
| `patches.py` | the patch framework: named targets per source, the registry, `runtime_patches` (restores on exit) |
| `wrappers.py` | read-only wrappers patches are built from (`wrap_with_log`, `loop_patch`, quiet prints) |
| `session_patches.py` | the session's run-time measures: `cuda_to_device`, `autocast` |
| `runtime_log.py` | `RuntimeLog`: the events patches record, `runtime_log.json` |
| `decode.py` | greedy decoding with a KV cache (`greedy_decode`, `DecodeProgram`), its limits |
| `family_members.py` | `RuntimeMembers`: the contract's runtime members (runtime log, measure, decode) |
| `measure.py` | measured FLOPs of a prefill and of chosen decode steps (`measure_forward`) |
| `routing.py` | the MoE routing a run took: `routing.json`, its summary, the uniform-routing expectation |
| `run_files.py` | this package's run files: `runtime_log.json`, `routing.json` (what its patches and routing write) |
"""
