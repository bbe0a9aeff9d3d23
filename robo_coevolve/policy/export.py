"""Export a trained policy to ONNX, and check that the exported graph acts like the torch policy.

A robot controller should not need Python and torch to run a policy: ONNX runs in onnxruntime
(C++, many platforms, no GIL), so a cloned skill can be deployed or benchmarked apart from this
package. Only the network is exported, as ``predict_chunk`` computes it: raw observations in
(normalised inside the graph with the checkpoint's statistics), the mode action chunk out (with a
practised policy's residual correction). The
instruction's sentence embedding is an input, not part of the graph: embeddings are computed
once per instruction and cached (``policy.encode_language``), and the ~90 MB language model
would dominate a graph whose per-step work is a few small layers. An export is trusted only
after :func:`check_parity` has compared its actions with torch's on the same inputs.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from robo_coevolve.action_space import HIGH, LOW
from robo_coevolve.policy.vla import VLAPolicy

INSTALL_HINT = "pip install 'robo_coevolve[export]'"
OUTPUT = "actions"
END_OUTPUT = "end_prob"  # predict_end policies only


def output_names(policy: VLAPolicy) -> list[str]:
    """The exported graph's outputs: the action chunk, and for ``predict_end`` policies the
    probability that each chunk step lies past the demonstration's end."""
    return [OUTPUT] + [END_OUTPUT] * policy.config.predict_end


class ExportError(RuntimeError):
    """An export that failed or whose actions differ from the torch policy's."""


def _require(module: str):
    try:
        return __import__(module)
    except ImportError as e:
        raise ImportError(f"ONNX export needs {module} ({e}); install it with: {INSTALL_HINT}") from None


def input_names(policy: VLAPolicy) -> list[str]:
    """The exported graph's inputs, in order, for ``policy``'s configuration."""
    c = policy.config
    names = ["proprio"]
    names += ["egg"] * c.use_egg_state + ["time"] * c.use_time + ["image"] * c.use_image
    names += ["points"] * c.use_points + ["language"] * c.use_language
    names += ["proprio_history"] * (policy.residual is not None and c.residual_history > 0)
    return names


class ChunkGraph(nn.Module):
    """``predict_chunk`` as a pure tensor function of the inputs named by :func:`input_names`:
    proprio ``(B, 15)``, egg ``(B, 13)``, time ``(B,)`` in s, image ``(B, H, W, 3)`` uint8,
    points ``(B, N, 3)``, language ``(B, E)``, and for a residual that reads a history
    ``proprio_history (B, residual_history, 15)`` (the previous steps' proprio, oldest first);
    out: actions ``(B, chunk, 5)`` in [-1, 1], and with ``predict_end`` also
    ``end_prob (B, chunk)``.

    The mixture's mode is taken with ``gather`` instead of ``GaussianMixture.mode``'s arange
    indexing, which a trace would freeze to the example's batch size.
    """

    def __init__(self, policy: VLAPolicy):
        super().__init__()
        self.policy = policy.eval()
        self.names = input_names(policy)
        self.register_buffer("low", torch.as_tensor(LOW, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(HIGH, dtype=torch.float32))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        p = self.policy
        batch = dict(zip(self.names, inputs, strict=True))
        prediction = p(batch)
        mixture = prediction.mixture
        best = mixture.logits.argmax(dim=-1)
        index = best.view(-1, 1, 1).expand(-1, 1, mixture.means.shape[-1])
        mode = mixture.means.gather(1, index).squeeze(1)
        if p.residual is not None:  # the residual's mean correction of the executed steps
            base = mode[:, : p.executed_dim]
            mode = p.corrected(mode, p.residual(prediction.features, base, p.residual_history(batch)))
        chunk = (mode * p.delta_std + p.delta_mean).view(-1, p.config.chunk, p.config.action_dim)
        if p.config.action_mode == "delta":
            command = 2.0 * (batch["proprio"][:, 10:15] - self.low) / (self.high - self.low) - 1.0
            chunk = command.unsqueeze(1) + chunk
        chunk = torch.clamp(chunk, -1.0, 1.0)
        if prediction.end_logits is None:
            return chunk
        return chunk, torch.sigmoid(prediction.end_logits)


def graph_inputs(policy: VLAPolicy, obs: dict) -> dict[str, np.ndarray]:
    """The exported graph's inputs from a policy observation batch (``instruction`` strings are
    embedded here with the policy's cached encoder unless ``language`` is given)."""
    out = {}
    for name in input_names(policy):
        if name == "language" and obs.get("language") is None:
            value = policy.encode_language(list(obs["instruction"])).cpu().numpy()
        else:
            value = obs[name]
        dtype = np.uint8 if name == "image" else np.float32
        out[name] = np.ascontiguousarray(np.asarray(value, dtype=dtype))
    return out


def example_observation(policy: VLAPolicy, batch: int, rng: np.random.Generator) -> dict:
    """A synthetic observation batch of the right shapes and plausible ranges (for export and timing)."""
    c = policy.config
    proprio = rng.normal(0.0, 0.1, (batch, c.proprio_dim)).astype(np.float32)
    proprio[:, 10:15] = rng.uniform(LOW, HIGH, (batch, 5))  # the previous command, in range
    obs = {"proprio": proprio, "instruction": ["scoop up the egg"] * batch}
    obs["egg"] = rng.normal(0.0, 0.1, (batch, c.egg_dim)).astype(np.float32)
    obs["time"] = rng.uniform(0.0, 3.0, batch).astype(np.float32)
    obs["image"] = rng.integers(0, 256, (batch, c.image_size, c.image_size, 3), dtype=np.uint8)
    obs["points"] = rng.normal(0.0, 0.05, (batch, c.num_points, 3)).astype(np.float32)
    history = proprio[:, None, :] + rng.normal(0.0, 0.01, (batch, c.residual_history, c.proprio_dim))
    obs["proprio_history"] = history.astype(np.float32)
    return obs


def export_onnx(policy: VLAPolicy, path: str | os.PathLike, opset: int = 17, batch: int = 2) -> Path:
    """Write ``policy``'s :class:`ChunkGraph` to ``path`` as ONNX with a dynamic batch size.

    Uses torch's TorchScript-based exporter (``dynamo=False``): it needs only ``onnx``, while
    the dynamo exporter also needs ``onnxscript``, and this graph (convs, linears, softmax,
    gather) is well within what tracing captures. torch 2.13 flags that exporter as deprecated;
    when it goes, switch to ``dynamo=True`` and add ``onnxscript`` to the ``export`` extra.
    """
    _require("onnx")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    graph = ChunkGraph(policy)
    feeds = graph_inputs(policy, example_observation(policy, batch, np.random.default_rng(0)))
    names = list(feeds)
    outputs = output_names(policy)
    dynamic = {name: {0: "batch"} for name in [*names, *outputs]}
    args = tuple(torch.from_numpy(feeds[n]) for n in names)
    with torch.no_grad(), warnings.catch_warnings():
        # The trace fixes Python-level shape checks (SmallCNN's resize) to the example: intended.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        # torch 2.13 marks this exporter as deprecated in favour of dynamo's; it still works.
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            torch.onnx.export(
                graph,
                args,
                str(path),
                input_names=names,
                output_names=outputs,
                dynamic_axes=dynamic,
                opset_version=opset,
                dynamo=False,
            )
        except Exception as e:  # the exporter raises many types; the user needs the one line
            raise ExportError(f"ONNX export of {type(policy).__name__} failed: {e}") from e
    return path


def onnx_session(path: str | os.PathLike, threads: int = 1):
    """An onnxruntime CPU session for ``path`` on ``threads`` intra-op threads."""
    ort = _require("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def check_parity(policy: VLAPolicy, session, obs: dict, atol: float = 1e-4) -> float:
    """Largest absolute difference between the exported graph's outputs (actions, and end
    probabilities for ``predict_end``) and :meth:`VLAPolicy.predict`'s on ``obs``; raises
    :class:`ExportError` above ``atol``."""
    feeds = graph_inputs(policy, obs)
    actions, end = policy.predict({**obs, "language": feeds.get("language")})
    expected = {OUTPUT: actions, END_OUTPUT: end}
    error = 0.0
    for name, got in zip(output_names(policy), session.run(output_names(policy), feeds), strict=True):
        if got.shape != expected[name].shape:
            raise ExportError(f"exported {name} have shape {got.shape}, torch gives {expected[name].shape}")
        error = max(error, float(np.max(np.abs(got - expected[name]))))
        if not error <= atol:  # also catches NaN
            raise ExportError(f"exported {name} differ from torch by {error:.2e} (> {atol:.0e})")
    return error


def latency(policy: VLAPolicy, session, obs: dict, repeats: int = 200) -> dict[str, float]:
    """Seconds per forward pass (one chunk for the whole batch), torch ``predict_chunk`` vs
    onnxruntime, both on the inputs of ``obs`` with the instruction embedding precomputed.
    Medians of ``repeats`` calls after a warm-up; torch runs on its current thread setting."""
    feeds = graph_inputs(policy, obs)
    torch_obs = {**obs, "language": feeds.get("language")}

    def median(fn) -> float:
        for _ in range(10):
            fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    return {
        "torch_s": median(lambda: policy.predict_chunk(torch_obs)),
        "onnxruntime_s": median(lambda: session.run([OUTPUT], feeds)),
    }
