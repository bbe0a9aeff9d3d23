"""ONNX export: the graph run by onnxruntime gives predict_chunk's actions, for any batch size."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from robo_coevolve.policy import PolicyConfig, VLAPolicy

pytest.importorskip("onnxruntime")  # a guard only: the test install (make test) includes the extra

from robo_coevolve.policy.export import (  # noqa: E402
    END_OUTPUT,
    OUTPUT,
    ExportError,
    check_parity,
    example_observation,
    export_onnx,
    graph_inputs,
    input_names,
    onnx_session,
)


def policy(**config) -> VLAPolicy:
    """A policy whose every input matters: random normalisation and FiLM (FiLM starts at zero)."""
    torch.manual_seed(0)
    p = VLAPolicy(PolicyConfig(**config))
    rng = np.random.default_rng(0)
    c = p.config
    p.set_normalization(
        {
            "proprio_mean": rng.normal(0, 0.1, c.proprio_dim),
            "proprio_std": rng.uniform(0.05, 0.5, c.proprio_dim),
            "egg_mean": rng.normal(0, 0.1, c.egg_dim),
            "egg_std": rng.uniform(0.05, 0.5, c.egg_dim),
            "delta_mean": rng.normal(0, 0.01, c.flat_dim),
            "delta_std": rng.uniform(0.01, 0.05, c.flat_dim),
        }
    )
    with torch.no_grad():
        p.film.weight.normal_(0.0, 0.2)
        if p.residual is not None:  # a practised residual: its correction must reach the graph
            p.residual.net[-1].weight.normal_(0.0, 1.0)
    return p.eval()


STATE = dict(use_image=False, use_egg_state=True)
IMAGE = dict(use_image=True, use_egg_state=False, image_size=64)
ABSOLUTE = dict(STATE, action_mode="absolute")
END = dict(STATE, predict_end=True)
RESIDUAL = dict(STATE, residual_scale=0.5)
HISTORY = dict(RESIDUAL, residual_history=3)


@pytest.mark.parametrize(
    "config",
    [STATE, IMAGE, ABSOLUTE, END, RESIDUAL, HISTORY],
    ids=["state", "image", "absolute", "end", "residual", "history"],
)
def test_onnx_actions_match_torch_for_any_batch(tmp_path, config):
    p = policy(**config)
    if p.residual is not None:  # the residual moves the executed steps, and the graph has them
        obs = example_observation(p, 3, np.random.default_rng(3))
        base = VLAPolicy(p.config)
        base.load_state_dict(
            {k: v for k, v in p.state_dict().items() if not k.startswith("residual.")}, strict=False
        )
        moved = np.abs(p.predict_chunk(obs) - base.eval().predict_chunk(obs))
        assert moved[:, : p.config.execute].max() > 1e-3 and moved[:, p.config.execute :].max() == 0.0
    if p.config.residual_history:  # the history is an input of the graph that moves the actions
        obs = example_observation(p, 3, np.random.default_rng(3))
        other = {**obs, "proprio_history": obs["proprio_history"] + 0.05}
        assert np.abs(p.predict_chunk(obs) - p.predict_chunk(other)).max() > 1e-4
    session = onnx_session(export_onnx(p, tmp_path / "p.onnx"))
    assert [i.name for i in session.get_inputs()] == input_names(p)
    rng = np.random.default_rng(1)
    for batch in (1, 7):  # exported with batch 2: the batch axis is dynamic
        obs = example_observation(p, batch, rng)
        assert check_parity(p, session, obs, atol=1e-4) <= 1e-4
        (actions,) = session.run([OUTPUT], graph_inputs(p, obs))
        assert actions.shape == (batch, 8, 5) and np.abs(actions).max() <= 1.0
        assert batch == 1 or np.ptp(actions[:, 0], axis=0).max() > 1e-3  # per-row inputs, per-row actions
    outputs = [o.name for o in session.get_outputs()]
    assert outputs == ([OUTPUT, END_OUTPUT] if p.config.predict_end else [OUTPUT])
    if p.config.predict_end:  # checked against torch by check_parity above
        (end,) = session.run([END_OUTPUT], graph_inputs(p, obs))
        assert end.shape == (7, 8) and np.all((end >= 0) & (end <= 1))


@pytest.mark.parametrize("config", [STATE, IMAGE], ids=["state", "image"])
def test_the_graph_reads_the_instruction_embedding_and_the_observation(tmp_path, config):
    p = policy(**config)
    session = onnx_session(export_onnx(p, tmp_path / "p.onnx"))
    feeds = graph_inputs(p, example_observation(p, 2, np.random.default_rng(2)))
    if "image" in feeds:  # a bright patch in a different corner per row: keypoints that differ
        feeds["image"][:] = 0
        feeds["image"][0, 4:14, 4:14] = 255
        feeds["image"][1, 48:58, 48:58] = 255
    (base,) = session.run([OUTPUT], feeds)
    other = "image" if config["use_image"] else "egg"
    for name in ("language", other):
        changed = dict(feeds)
        changed[name] = np.ascontiguousarray(feeds[name][::-1])  # swap the two rows' values
        if name == "language":
            changed[name] = -feeds[name]
        (moved,) = session.run([OUTPUT], changed)
        assert np.abs(moved - base).max() > 1e-3, name


def test_parity_check_catches_a_graph_that_differs_from_the_policy(tmp_path):
    p = policy(**STATE)
    session = onnx_session(export_onnx(p, tmp_path / "p.onnx"))
    with torch.no_grad():
        p.head.means.bias.add_(0.5)  # the torch policy moves on; the export does not
    with pytest.raises(ExportError, match="differ from torch"):
        check_parity(p, session, example_observation(p, 4, np.random.default_rng(0)))


def export_command(*args: str) -> subprocess.CompletedProcess:
    """``robo-coevolve-export policy ARGS``."""
    return subprocess.run(
        [sys.executable, "-m", "robo_coevolve.cli.export", "policy", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_export_command_checks_parity_and_reports_latency(tmp_path):
    policy(**STATE).save_pretrained(tmp_path / "ckpt")
    proc = export_command(str(tmp_path / "ckpt"), "--repeats", "5")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ckpt" / "policy.onnx").stat().st_size > 10_000
    rows = [
        line for line in proc.stdout.splitlines() if line.startswith("| 1 |") or line.startswith("| 16 |")
    ]
    assert len(rows) == 2 and all(" ms |" in r for r in rows), proc.stdout
    bad = export_command(str(tmp_path / "missing"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert f"policy checkpoint {tmp_path / 'missing'} does not exist: give a directory" in bad.stderr
