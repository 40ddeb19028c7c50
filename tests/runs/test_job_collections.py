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


def test_garbage_a_job_drops_is_still_collected():
    class Cycle:
        pass

    with fewer_collections():
        a = Cycle()
        a.me = a
        del a
        assert gc.collect() >= 1  # collect() still works inside: only the automatic young threshold moved
