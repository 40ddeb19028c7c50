"""conf/hardware/: every datasheet loads, every number has a source that states it, bad input is one
ConfigError naming the field."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from roofline_helpers import compose_cfg

from llm_perf_opt.analytic.time.hardware import (
    Hardware,
    datasheet_names,
    hardware_names,
    load_hardware,
    load_hardware_config,
)
from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.config.schemas import HardwareConfig, HardwareFigure
from llm_perf_opt.errors import ConfigError

REQUIRED = ("h100_sxm", "h100_pcie", "h200", "a100_40gb", "a100_80gb", "l40s", "rtx4090", "rtx5090")


def test_the_required_devices_and_measured_exist():
    assert set(REQUIRED) <= set(datasheet_names())
    assert "measured" in hardware_names()
    assert load_hardware_config("measured").kind == "measured"


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


@pytest.mark.parametrize("name", REQUIRED)
def test_every_figure_has_a_source_that_states_it(name):
    cfg = load_hardware_config(name)
    assert set(cfg.matmul_tflops) == {"bfloat16", "float16", "float32", "tf32"}
    figures = cfg.figures()
    assert {"vector_tflops", "memory_bandwidth_gbs", "memory_gb"} <= set(figures)
    for path, fig in figures.items():
        assert fig.value > 0, path
        assert fig.doc in cfg.documents and cfg.documents[fig.doc].strip(), path
        # the value is the quoted number itself, half of it (dense from a sparse figure) or TB/s as GB/s
        candidates = [x * k for x in _numbers(fig.quote) for k in (1, 0.5, 1000)]
        assert any(abs(fig.value - c) <= 1e-6 * fig.value for c in candidates), (path, fig.value, fig.quote)
        if any(abs(fig.value - x * 0.5) <= 1e-6 * fig.value for x in _numbers(fig.quote)) and not any(
            abs(fig.value - x) <= 1e-6 * fig.value for x in _numbers(fig.quote)
        ):
            assert fig.note and "/ 2" in fig.note, f"{path}: halved without saying so"


@pytest.mark.parametrize("name", REQUIRED)
def test_datasheet_in_si_units_with_sources(name):
    hw = load_hardware(name)
    cfg = load_hardware_config(name)
    assert hw.matmul_flops["bfloat16"] == pytest.approx(cfg.matmul_tflops["bfloat16"].value * 1e12)
    assert hw.bandwidth == pytest.approx(cfg.memory_bandwidth_gbs.value * 1e9)
    roof = hw.roof()  # the YAML's default dtype: bfloat16
    assert roof.dtype == "bfloat16" and roof.matmul_key == "bfloat16"
    sources = dict(roof.sources)
    assert set(sources) == {"matmul", "vector", "bandwidth"}
    assert cfg.documents[cfg.matmul_tflops["bfloat16"].doc] in sources["matmul"]
    assert cfg.matmul_tflops["bfloat16"].quote in sources["matmul"]


def test_geforce_cards_use_the_fp32_accumulate_rate():
    for name in ("rtx4090", "rtx5090"):
        fig = load_hardware_config(name).matmul_tflops["float16"]
        assert "FP32 Accumulate" in fig.quote and "FP16 Accumulate" in fig.quote
        fp32_acc, fp16_acc = (
            _numbers(fig.quote.split("(with FP16")[0])[-2],
            _numbers(fig.quote.split("(with FP16")[1])[0],
        )
        assert fig.value == fp32_acc and fp16_acc == pytest.approx(2 * fp32_acc, rel=1e-3)  # 330.3 vs 2 x 165.2


def test_float32_and_tf32_pick_their_peaks():
    hw = load_hardware("h100_sxm")
    assert hw.roof("float32").matmul_flops == pytest.approx(67e12)
    assert hw.roof("float32", allow_tf32=True).matmul_key == "tf32"
    assert hw.roof("float32", allow_tf32=True).matmul_flops == pytest.approx(494.5e12)
    assert hw.roof("float16").matmul_flops == pytest.approx(989.5e12)


@pytest.mark.parametrize("name", REQUIRED + ("measured",))
def test_every_option_composes_in_analyze(name):
    cfg = to_typed_config(compose_cfg(f"hardware={name}"))
    assert cfg.hardware.name == name


def test_analyze_defaults_to_the_full_model_without_hardware_and_trace_to_the_measured_roof():
    analyze = to_typed_config(compose_cfg())
    assert analyze.model.spec == "deepseek_ocr" and analyze.hardware is None
    assert to_typed_config(compose_cfg("model=twin_tiny")).model.spec == "tiny"
    assert to_typed_config(compose_cfg("hardware=h100_sxm")).hardware.name == "h100_sxm"
    trace = to_typed_config(compose_cfg(config_name="config"))
    assert trace.model.spec == "tiny" and trace.hardware.kind == "measured"
    assert to_typed_config(compose_cfg("~hardware", config_name="config")).hardware is None


# ------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["hardware=h100_sxm", "hardware.matmul_tflops.bfloat16.value=0"], "hardware.matmul_tflops.bfloat16.value=0"),
        (["hardware=h100_sxm", "hardware.vector_tflops.value=-67"], "hardware.vector_tflops.value=-67"),
        (["hardware=a100_80gb", "hardware.memory_bandwidth_gbs.value=0"], "hardware.memory_bandwidth_gbs.value=0"),
        (["hardware=l40s", "hardware.dtype=float8"], "hardware.dtype='float8'"),
        (["hardware=h200", "hardware.kind=guess"], "hardware.kind='guess'"),
        (["hardware=rtx4090", "hardware.memory_gb.doc=blog"], "hardware.memory_gb.doc='blog'"),
    ],
)
def test_bad_values_name_the_field(overrides, needle):
    with pytest.raises(ConfigError) as err:
        to_typed_config(compose_cfg(*overrides))
    assert needle in str(err.value) and "\n" not in str(err.value)


def _conf_with(tmp_path: Path, name: str, edit) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(conf_dir() / "hardware", conf / "hardware")
    path = conf / "hardware" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))
    return conf


def test_a_non_positive_figure_in_a_yaml_is_refused(tmp_path):
    conf = _conf_with(tmp_path, "h100_sxm", lambda d: d["memory_bandwidth_gbs"].update(value=-1))
    with pytest.raises(ConfigError, match=r"hardware\.memory_bandwidth_gbs\.value=-1"):
        load_hardware_config("h100_sxm", conf)


def test_a_figure_without_a_quote_is_refused(tmp_path):
    conf = _conf_with(tmp_path, "h200", lambda d: d["vector_tflops"].update(quote=" "))
    with pytest.raises(ConfigError, match=r"hardware\.vector_tflops\.quote is empty"):
        load_hardware_config("h200", conf)


def test_a_dtype_without_a_peak_names_the_field(tmp_path):
    def only_bf16(d):
        d["matmul_tflops"] = {"bfloat16": d["matmul_tflops"]["bfloat16"]}

    conf = _conf_with(tmp_path, "l40s", only_bf16)
    hw = Hardware.from_config(load_hardware_config("l40s", conf))
    with pytest.raises(ConfigError, match=r"hardware\.dtype='float16' is invalid: l40s has no matmul peak for float16"):
        hw.roof("float16")
    with pytest.raises(ConfigError, match=r"hardware\.allow_tf32=True is invalid: l40s has no matmul peak for tf32"):
        hw.roof("float32", allow_tf32=True)

    def bf16_default_fp16(d):
        only_bf16(d)
        d["dtype"] = "float16"

    conf = _conf_with(tmp_path / "b", "l40s", bf16_default_fp16)
    with pytest.raises(ConfigError, match=r"hardware\.dtype='float16'"):
        load_hardware_config("l40s", conf)


def test_unknown_name_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"hardware='h999' is invalid: one of a100_40gb, a100_80gb, .*rtx5090"):
        load_hardware_config("h999")


def test_measured_takes_no_figures():
    with pytest.raises(ConfigError, match=r"hardware\.vector_tflops=.* a measured roof takes no figures"):
        HardwareConfig(name="measured", kind="measured", vector_tflops=HardwareFigure(1.0, "x", "y"))


def test_unknown_group_options_are_found_before_hydra():
    from llm_perf_opt.config.options import unknown_group_option

    assert unknown_group_option(["hardware=h100_sxm", "workload=gundam", "model=twin_tiny"]) is None
    assert (
        unknown_group_option(
            ["hardware=null", "hydra/launcher=submitit_local", "hardware.dtype=x", "+extra=1", "hardware=glob(*)"]
        )
        is None
    )
    problem = unknown_group_option(["workload=tiny,gundam", "hardware=h100_sxm,h999"])
    assert str(problem).startswith("hardware='h999' is invalid: one of a100_40gb, a100_80gb, custom, h100_pcie")
    assert str(unknown_group_option(["model=huge"])).startswith(
        "model='huge' is invalid: one of ocr2_twin, ocr2_twin_tiny, ocr2_vendor, twin, twin_tiny"
    )
