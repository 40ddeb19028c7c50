"""Everything specific to DeepSeek-OCR: spec, view layout, inputs, the architecture twin, session, patches."""
