"""llm-perf-opt: see exactly what DeepSeek-OCR computes."""

__version__ = "0.1.0"
