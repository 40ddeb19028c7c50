"""compute_view_layout against worked examples of the vendor's infer(), PIL's own geometry, invariants, and (opt-in)
the vendor."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageOps

from llm_perf_opt.deepseek_ocr_shared.layout import candidate_grids, closest_grid, contain_size
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.errors import ConfigError

TINY = VisionWorkload(512, 512, False)
SMALL = VisionWorkload(640, 640, False)
BASE = VisionWorkload(1024, 1024, False)
LARGE = VisionWorkload(1280, 1280, False)
GUNDAM = VisionWorkload(1024, 640, True)
GUNDAM_M = VisionWorkload(1280, 1024, True, tile_size=1024)


@pytest.mark.parametrize(
    "workload, tokens",
    [(TINY, 73), (SMALL, 111), (BASE, 273), (LARGE, 421), (GUNDAM, 903)],
)
def test_mode_token_counts_for_letter_page(workload, tokens):
    assert compute_view_layout(workload, 1700, 2200).image_tokens == tokens


@pytest.mark.parametrize(
    "size, grid",
    [
        ((1700, 2200), (2, 3)),
        ((2200, 1700), (3, 2)),
        ((1000, 1000), (2, 2)),
        ((3000, 1000), (3, 1)),
        ((600, 500), (1, 1)),
    ],
)
def test_worked_grid_examples(size, grid):
    layout = compute_view_layout(GUNDAM, *size)
    assert (layout.w_crop, layout.h_crop) == grid


def test_gundam_letter_page_in_detail():
    lay = compute_view_layout(GUNDAM, 1700, 2200)
    q, q_base = 640 // 16 // 4, 1024 // 16 // 4  # 10, 16
    assert lay.global_tokens == q_base * (q_base + 1) + 1 == 273
    assert lay.local_tokens == (q * 2 + 1) * (q * 3) == 630
    assert (lay.num_crops, lay.num_views, lay.vision_passes) == (6, 7, 2)
    assert lay.crop_tensor_shape == (6, 3, 640, 640)
    assert lay.global_tensor_shape == (1, 3, 1024, 1024)
    assert lay.crops_resized == (1280, 1920)


def test_small_page_in_crop_mode_has_no_crops():
    lay = compute_view_layout(GUNDAM, 600, 500)
    assert (lay.num_crops, lay.num_views, lay.vision_passes, lay.local_tokens) == (0, 1, 1, 0)
    assert lay.crop_tensor_shape == (1, 3, 1024, 1024)  # zero tensor of side base_size
    assert lay.image_tokens == 273


def test_crop_threshold_is_inclusive_640():
    assert compute_view_layout(GUNDAM, 640, 640).num_crops == 0
    assert compute_view_layout(GUNDAM, 641, 640).num_crops > 0


def test_gundam_m_tiles_at_image_size():
    lay = compute_view_layout(GUNDAM_M, 1700, 2200)
    q, q_base = 1024 // 64, 1280 // 64
    assert (lay.w_crop, lay.h_crop) == (2, 3)
    assert lay.image_tokens == q_base * (q_base + 1) + 1 + (q * 2 + 1) * (q * 3)
    assert lay.crop_tensor_shape == (6, 3, 1024, 1024)


def test_area_tie_break_prefers_larger_grid_only_for_large_pages():
    # 2:1 pages tie exactly between 2x1, 4x2 (and 6x3 is > 9 tiles): the larger grid wins only when the
    # page area exceeds half of its area at 640-pixel tiles.
    assert closest_grid(1400, 700, 640) == (2, 1)  # 980,000 <= 0.5 * 640² * 8 = 1,638,400
    assert closest_grid(2000, 1000, 640) == (4, 2)  # 2,000,000 > 1,638,400


def test_candidate_grids_cover_2_to_9_sorted_by_count():
    grids = candidate_grids(2, 9)
    assert all(2 <= w * h <= 9 for w, h in grids)
    counts = [w * h for w, h in grids]
    assert counts == sorted(counts)
    expected = {(w, h) for w in range(1, 10) for h in range(1, 10) if 2 <= w * h <= 9}
    assert set(grids) == expected


@settings(max_examples=400, deadline=None)
@given(
    width=st.integers(1, 6000),
    height=st.integers(1, 6000),
    workload=st.sampled_from([TINY, SMALL, BASE, LARGE, GUNDAM, GUNDAM_M]),
)
def test_layout_invariants(width, height, workload):
    lay = compute_view_layout(workload, width, height)
    q_global = math.ceil(lay.global_side / 64)
    assert lay.global_grid == q_global
    assert lay.global_tokens == q_global * (q_global + 1) + 1
    if lay.num_crops:
        assert workload.crop_mode and max(width, height) > 640
        assert 2 <= lay.w_crop * lay.h_crop <= 9 and lay.num_crops == lay.w_crop * lay.h_crop
        assert lay.local_tokens == (lay.crop_grid * lay.w_crop + 1) * (lay.crop_grid * lay.h_crop)
        assert lay.crops_resized == (lay.crop_side * lay.w_crop, lay.crop_side * lay.h_crop)
        assert lay.vision_passes == 2 and lay.num_views == 1 + lay.num_crops
    else:
        assert lay.local_tokens == 0 and lay.vision_passes == 1 and lay.num_views == 1
        assert (lay.w_crop, lay.h_crop) == (1, 1)
    assert lay.image_tokens == lay.global_tokens + lay.local_tokens
    cw, ch = lay.global_content
    assert max(cw, ch) == lay.global_side and min(cw, ch) >= 0


@settings(max_examples=150, deadline=None)
@given(width=st.integers(1, 3000), height=st.integers(1, 3000), side=st.sampled_from([512, 640, 1024, 1280]))
def test_contain_size_matches_pil(width, height, side):
    img = Image.new("RGB", (width, height))
    assert contain_size(width, height, side) == ImageOps.contain(img, (side, side)).size


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"base_size": 1000}, "base_size"),
        ({"base_size": 0}, "base_size"),
        ({"image_size": -64}, "image_size"),
        ({"image_size": 1024}, "image_size"),  # crop mode with a 640 tile
        ({"max_num": 1}, "max_num"),
        ({"patch_size": 0}, "patch_size"),
        ({"crop_mode": "yes"}, "crop_mode"),
    ],
)
def test_bad_workloads_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=f"workload.{field}="):
        VisionWorkload(**kwargs)


@pytest.mark.parametrize("size", [(0, 100), (100, -1), (1.5, 100)])
def test_bad_page_sizes(size):
    with pytest.raises(ConfigError, match="workload.page"):
        compute_view_layout(GUNDAM, *size)


@pytest.fixture
def vendor_modeling(vendor_dir, monkeypatch):
    """The vendor's modeling module, imported as a throw-away package under the project's scoped
    torchvision stand-in (the vendor imports torchvision for transforms no layout code uses)."""
    import transformers  # noqa: F401 - imported before the stand-in exists, so it is never probed

    from llm_perf_opt.model_runtime.torchvision_stand_in import torchvision_stand_in

    spec = importlib.util.spec_from_file_location(
        "vendor_dsocr_pkg", vendor_dir / "__init__.py", submodule_search_locations=[str(vendor_dir)]
    )
    monkeypatch.setitem(sys.modules, "vendor_dsocr_pkg", importlib.util.module_from_spec(spec))
    with torchvision_stand_in():
        module = importlib.import_module("vendor_dsocr_pkg.modeling_deepseekocr")
    yield module
    for name in [n for n in sys.modules if n.startswith("vendor_dsocr_pkg.")]:
        sys.modules.pop(name)


@pytest.mark.vendor
def test_grid_matches_vendor_dynamic_preprocess(vendor_modeling):
    vendor = vendor_modeling
    import random

    rng = random.Random(0)
    sizes = [(rng.randint(641, 5000), rng.randint(100, 5000)) for _ in range(120)]
    sizes += [(1250, 1000), (2000, 1000), (1400, 700), (1000, 2000), (1920, 1080), (1700, 2200)]
    for w, h in sizes:
        # dynamic_preprocess returns the grid together with the crops; compare the grid.
        _, grid = vendor.dynamic_preprocess(Image.new("RGB", (w, h)))
        assert tuple(grid) == closest_grid(w, h, 640), (w, h)
