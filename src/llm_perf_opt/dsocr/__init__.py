"""Everything specific to DeepSeek-OCR: spec, view layout, inputs, the architecture twin, session, patches.

Its data in the run: `run_files.py` (runtime_log.json and routing.json, which its patches and routing record write).
"""
