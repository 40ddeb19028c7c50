"""Model-agnostic call graphs: TorchLens capture, per-node metadata, schema, grouping, rendering."""
