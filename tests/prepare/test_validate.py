"""The validation step on page images (issue 34, groups 5 and 13): a file whose header reads but whose data is
cut is refused before the run directory exists; what the vendor's own conversion does to a 16-bit greyscale or
an animated page is said in a note (the run keeps the vendor's behaviour)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.jobs.cli import main
from llm_perf_opt.prepare.validate import validate


def _compose(*overrides: str):
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=["model=twin_tiny", "workload=tiny", *overrides])


def test_a_page_whose_data_is_cut_is_refused_before_the_run_directory(tmp_path, capsys):
    rgb = (np.random.default_rng(0).random((300, 200, 3)) * 255).astype("uint8")
    Image.fromarray(rgb).save(tmp_path / "page.png")
    data = (tmp_path / "page.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    with Image.open(tmp_path / "cut.png") as img:
        assert img.size == (200, 300)  # the header reads: only decoding the data finds the cut
    with pytest.raises(ConfigError, match="could not be read as an image: image file is truncated"):
        validate(_compose(f"workload.page.image={tmp_path / 'cut.png'}"))
    out = tmp_path / "run"
    try:
        code = main(["trace", "model=twin_tiny", f"workload.page.image={tmp_path / 'cut.png'}", f"hydra.run.dir={out}"])
    except SystemExit as exc:
        code = exc.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "image file is truncated" in err[0], err
    assert not out.exists()
    # analyze builds no pixels: it reads the header only, and takes the page
    assert validate(_compose(f"workload.page.image={tmp_path / 'cut.png'}"), runs_model=False).notes == ()


def test_a_16_bit_greyscale_page_says_how_much_the_vendors_conversion_whitens(tmp_path):
    values = np.full((100, 100), 40_000, dtype="uint16")
    values[:, :25] = 200  # a quarter of the page within 8 bits
    Image.fromarray(values).save(tmp_path / "grey16.png")
    with Image.open(tmp_path / "grey16.png") as img:
        assert img.mode == "I;16"
        white = (np.asarray(img.convert("RGB")) == 255).all(axis=-1).mean()
    assert white == 0.75  # what the vendor's load_image (convert('RGB')) makes of it
    (note,) = validate(_compose(f"workload.page.image={tmp_path / 'grey16.png'}")).notes
    assert "I;16 pixels" in note and "75.0% of its pixels turn white" in note and "convert('RGB')" in note


def test_an_animated_page_says_only_its_first_frame_is_read(tmp_path):
    frames = [Image.new("RGB", (200, 300), (c, c, c)) for c in (0, 128, 255)]
    frames[0].save(tmp_path / "anim.gif", save_all=True, append_images=frames[1:])
    (note,) = validate(_compose(f"workload.page.image={tmp_path / 'anim.gif'}")).notes
    assert "animated GIF of 3 frames" in note and "first frame only" in note
    Image.new("RGB", (200, 300)).save(tmp_path / "still.png")
    assert validate(_compose(f"workload.page.image={tmp_path / 'still.png'}")).notes == ()
