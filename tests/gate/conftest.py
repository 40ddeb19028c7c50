"""Real runs of the verification gate (`pipelines/verify.py`, what ./dev verify runs), once per test session:
the quick matrix as it is (`quick_gate`, shared by the session: tests/conftest.py), a real divergence of one
job, and a moved pin judged alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_runs import GateRun, made_once, run_gate  # the quick gate itself is the session's (tests/conftest.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
ONE_JOB = "verify.sweep.workload=[tiny]"  # the quick matrix narrowed to its cheapest job


@pytest.fixture(scope="session")
def spec_divergence_gate(tmp_path_factory) -> GateRun:
    """The analytic model built from another spec than the model that ran: 3 routed experts per token in
    the analytic model, 2 in the tiny twin that ran. Its one job runs without a roofline (`~hardware`, an
    override the gate applies to every job): the gate judges FLOPs, bytes and kernel counts, never times."""
    return made_once(
        tmp_path_factory,
        "spec_gate",
        lambda d: run_gate(
            d / "spec", "verify=quick", ONE_JOB, "+verify.analytic_spec.decoder.num_experts_per_tok=3", "~hardware"
        ),
    )


@pytest.fixture(scope="session")
def changed_expected(tmp_path_factory) -> tuple[Path, int, int]:
    """A copy of conf/verify/expected.yaml with one pinned number changed: (path, old, new)."""
    text = (REPO_ROOT / "conf" / "verify" / "expected.yaml").read_text()
    marker = "      prefill:\n        flops_matmul: "
    start = text.index(marker) + len(marker)
    end = text.index("\n", start)
    actual = int(text[start:end])
    pinned = actual + 2 * 64 * 1280  # a tiny change (about 5e-8 relative): pins compare exactly, with no tolerance
    path = tmp_path_factory.mktemp("expected") / "expected.yaml"
    path.write_text(text[:start] + str(pinned) + text[end:])
    return path, pinned, actual


@pytest.fixture(scope="session")
def pin_divergence_gate(tmp_path_factory, changed_expected) -> GateRun:
    """The gate judging the pins only (`verify.pins_only=true`: no job runs) against the changed file."""
    path, _, _ = changed_expected
    return made_once(
        tmp_path_factory,
        "pins_gate",
        lambda d: run_gate(d / "pins", "verify=quick", "verify.pins_only=true", f"verify.expected={path}"),
    )
