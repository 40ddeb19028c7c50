"""Schema-versioned JSON artifacts: every stage output is `{schema, schema_version, producer, data}`.

Writes are atomic (temporary file in the same directory + `os.replace`) so an interrupted run never
leaves half a file; loaders reject unknown schema versions and missing fields by name.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import platform
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from llm_perf_opt.errors import ArtifactError


def _library_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("llm-perf-opt", "torch", "transformers", "torchlens", "hydra-core"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    out["python"] = platform.python_version()
    return out


def config_hash(config: Any) -> str:
    """Short stable hash of a (JSON-able) config, to tell which run produced a file."""
    blob = json.dumps(to_jsonable(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def producer(config: Any = None) -> dict[str, Any]:
    info: dict[str, Any] = {"versions": _library_versions()}
    if config is not None:
        info["config_hash"] = config_hash(config)
    return info


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, mappings, tuples, paths and torch dtypes/sizes to plain JSON values."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        return obj.item()
    try:  # OmegaConf containers
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(obj, (DictConfig, ListConfig)):
            return OmegaConf.to_container(obj, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    return str(obj)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """A temporary file name beside `path` that replaces `path` when the block ends, and is removed when it
    raises: for writers that want a file name rather than text (torch.profiler's Chrome trace), so they too
    never leave half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # a full disk: name the file, not the temporary one
            exc.filename = str(path)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def write_artifact(path: str | os.PathLike, schema: str, version: int, data: Any, config: Any = None) -> Path:
    doc = {"schema": schema, "schema_version": version, "producer": producer(config), "data": to_jsonable(data)}
    return atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """The JSON document in `path`; a name ending in `.gz` is read through gzip (a recorded run keeps its big files
    compressed)."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: no such file")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                return json.load(fh)
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except (OSError, EOFError) as exc:  # a truncated or not-gzip .gz
        raise ArtifactError(f"{path}: not a readable gzip file ({exc})") from None


def file_in(path: str | os.PathLike, name: str) -> Path:
    """`path` as given, or the file `name` inside it when `path` is a directory (a run directory)."""
    path = Path(path)
    return path / name if path.is_dir() else path


def read_artifact(
    path: str | os.PathLike,
    schema: str,
    versions: Iterable[int],
    required: Iterable[str] = (),
) -> tuple[int, dict[str, Any]]:
    """Load an artifact; return (schema_version, data). `versions` are the versions this reader knows."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ArtifactError(f"{path}: expected a JSON object at top level, found {type(doc).__name__}")
    for key in ("schema", "schema_version", "data"):
        if key not in doc:
            raise ArtifactError(f"{path}: missing field '{key}'")
    if doc["schema"] != schema:
        raise ArtifactError(f"{path}: schema is '{doc['schema']}', expected '{schema}'")
    known = sorted(set(versions))
    if doc["schema_version"] not in known:
        raise ArtifactError(
            f"{path}: {schema} schema_version {doc['schema_version']!r} is unknown (this reader knows {known})"
        )
    data = doc["data"]
    if not isinstance(data, dict):
        raise ArtifactError(f"{path}: field 'data' must be an object")
    for key in required:
        if key not in data:
            raise ArtifactError(f"{path}: {schema} data lacks required field '{key}'")
    return doc["schema_version"], data


def require(obj: Any, fields: Iterable[str], where: str, path: str | os.PathLike) -> Mapping[str, Any]:
    """`obj` as a mapping that has every one of `fields`; else one ArtifactError naming the first missing
    (what every loader checks below `data`: a list's entries, a section)."""
    if not isinstance(obj, Mapping):
        raise ArtifactError(f"{path}: {where} must be an object, found {type(obj).__name__}")
    for name in fields:
        if name not in obj:
            raise ArtifactError(f"{path}: {where} lacks required field '{name}'")
    return obj
