"""`runs.memory.fewer_collections`: a job runs with Python's young-generation threshold raised, and every job of a
process (a sweep, the tests' in-process jobs) hands the process's own threshold back, however it ends."""

import gc

import pytest

from llm_perf_opt.runs.memory import JOB_GC_YOUNG, fewer_collections


def test_the_threshold_is_raised_inside_and_restored_on_every_path():
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (max(JOB_GC_YOUNG, before[0]), *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(KeyboardInterrupt), fewer_collections():
        raise KeyboardInterrupt
    assert gc.get_threshold() == before


def test_a_process_that_collects_less_often_already_keeps_its_threshold():
    before = gc.get_threshold()
    try:
        gc.set_threshold(JOB_GC_YOUNG * 2, *before[1:])
        with fewer_collections():
            assert gc.get_threshold()[0] == JOB_GC_YOUNG * 2
        assert gc.get_threshold()[0] == JOB_GC_YOUNG * 2
    finally:
        gc.set_threshold(*before)


def test_the_collector_still_runs_by_itself_inside_a_job():
    """Only the young threshold moves: allocating more than it collects on its own (a job that turned collection
    off, or set no finite threshold, would leak every cycle it drops until its end)."""
    started = []

    def seen(phase, info):
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        with fewer_collections():
            kept = [[] for _ in range(3 * JOB_GC_YOUNG)]
    finally:
        gc.callbacks.remove(seen)
    assert len(kept) == 3 * JOB_GC_YOUNG and len(started) >= 2, started
