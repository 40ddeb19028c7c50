"""One exception family, so a pipeline can print one clear line for anything the user can fix."""
from __future__ import annotations


class PipelineError(Exception):
    """Base of every error the pipeline raises on purpose (bad input, missing file, changed vendor code)."""


class ConfigError(PipelineError, ValueError):
    """A configuration value is invalid: the message names the field, the value and what is allowed."""

    @classmethod
    def field(cls, name: str, value: object, allowed: str) -> "ConfigError":
        return cls(f"{name}={value!r} is invalid: {allowed}")


class ArtifactError(PipelineError):
    """An artifact file is missing, corrupt, of an unknown schema version, or lacks a field."""


class PatchError(PipelineError):
    """A runtime patch target is missing (the vendor code changed) or a patch could not be applied."""


class TraceError(PipelineError):
    """The forward could not be captured (TorchLens refused it, or the graph is inconsistent)."""
