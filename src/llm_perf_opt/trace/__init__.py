"""The trace job's stages (validate, inputs, profile, capture, decode, graph costs, roofline) and the builders
every job shares (`builders`: the analytic model and the inputs exactly as the trace job builds them)."""
