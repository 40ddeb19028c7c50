"""`report.plots` under a home directory that does not exist (issue 34, group 12): matplotlib would make it
(`~/.config/matplotlib`, `~/.cache/matplotlib`, every missing parent); a plot is drawn and nothing appears there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DRAW = """
import sys
from pathlib import Path
from llm_perf_opt.report import plots  # the first import of matplotlib, as in every job
import matplotlib
fig = plots.plt.figure()
fig.gca().plot([1, 2], [3, 4])
written = plots.save(fig, Path(sys.argv[1]), "line")
print(matplotlib.get_configdir())
print(matplotlib.get_cachedir())
print(written["svg"])
"""


def test_a_missing_home_is_never_created_and_the_plot_is_drawn(tmp_path):
    home = tmp_path / "nonexistent" / "x"
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    proc = subprocess.run(
        [sys.executable, "-c", DRAW, str(tmp_path / "out")],
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    config, cache, svg = proc.stdout.split()
    assert Path(svg).is_file() and not (tmp_path / "nonexistent").exists()
    assert not config.startswith(str(tmp_path)) and config == cache  # a temporary directory of the process
    assert not Path(config).exists()  # removed at exit
    assert "Matplotlib created a temporary cache directory" not in proc.stderr
