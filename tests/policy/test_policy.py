import json

import numpy as np
import pytest
import torch

from robo_coevolve.action_space import command_as_action
from robo_coevolve.explore.closed_loop import Policy
from robo_coevolve.policy import PolicyConfig, PolicyConfigError, VLAPolicy, normalization_stats
from robo_coevolve.policy.encoders import LanguageEncoder, default_language_model, random_shift
from robo_coevolve.policy.heads import GaussianMixture
from robo_coevolve.task_spec import SPATULA_HIGH, SPATULA_LOW

SCOOP = "scoop the fried egg off the pan"
FLIP = "flip the fried egg over"
STATE_ONLY = dict(
    use_image=False,
    use_egg_state=True,
    use_language=False,
    hidden=64,
    chunk=4,
    execute=2,
    predict_end=False,
    min_std=1e-3,
    input_noise=0.0,
)


def centred_proprio(batch: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Proprio whose previous command is the middle of the range (action 0), so no clipping."""
    proprio = np.zeros((batch, 15), np.float32)
    proprio[:, 10:15] = (np.array(SPATULA_LOW) + np.array(SPATULA_HIGH)) / 2
    if rng is not None:
        proprio[:, :10] = rng.normal(size=(batch, 10))
    return proprio


def observations(cfg: PolicyConfig, batch: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    obs = {
        "proprio": centred_proprio(batch, rng),
        "instruction": [SCOOP, FLIP] * (batch // 2) + [SCOOP] * (batch % 2),
        "time": rng.uniform(0, 3, batch).astype(np.float32),
    }
    if cfg.use_egg_state:
        obs["egg"] = rng.normal(size=(batch, 13)).astype(np.float32)
    if cfg.use_image:
        obs["image"] = rng.integers(0, 256, (batch, cfg.image_size, cfg.image_size, 3), dtype=np.uint8)
    if cfg.use_points:
        obs["points"] = rng.normal(scale=0.1, size=(batch, cfg.num_points, 3)).astype(np.float32)
    return obs


def demo_deltas(per_sample: np.ndarray, chunk: int, seed: int) -> np.ndarray:
    """Delta chunks ``(N, chunk, 5)`` at ``per_sample`` values plus demo-like jitter: noise-free targets
    let the likelihood sharpen to ``min_std``, where a fixed learning rate turns unstable."""
    jitter = np.random.default_rng(seed).normal(scale=0.05, size=(len(per_sample), chunk, 5))
    return (per_sample[:, None, None] + jitter).astype(np.float32)


def fit(policy: VLAPolicy, batch: dict, steps: int, lr: float = 3e-3) -> list[float]:
    torch.manual_seed(0)
    optimiser = torch.optim.Adam(policy.parameters(), lr=lr)
    policy.train()
    losses = []
    for _ in range(steps):
        loss = policy.loss(batch)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return losses


@pytest.fixture(scope="module")
def vision_dir(tmp_path_factory):
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    path = tmp_path_factory.mktemp("tiny_vit")
    ViTModel(cfg).save_pretrained(path)
    return path


@pytest.mark.parametrize(
    "overrides",
    [
        dict(use_image=True, use_egg_state=False, hidden=64, image_size=32),
        dict(STATE_ONLY),
        dict(hidden=64, use_image=False, use_points=True, num_points=32, use_language=False),
    ],
    ids=["image+language", "state-only", "points"],
)
def test_forward_loss_and_predict_shapes(overrides):
    torch.manual_seed(0)
    cfg = PolicyConfig(**overrides)
    policy = VLAPolicy(cfg)
    assert isinstance(policy, Policy)
    assert policy.privileged == cfg.use_egg_state
    assert policy.image_size == (cfg.image_size if cfg.use_image else None)
    obs = observations(cfg, 3)
    mixture = policy(obs).mixture
    k, d = cfg.components, cfg.chunk * cfg.action_dim
    assert mixture.logits.shape == (3, k)
    assert mixture.means.shape == mixture.log_stds.shape == (3, k, d)
    assert torch.all(mixture.log_stds.exp() >= cfg.min_std * (1 - 1e-6))
    deltas = np.random.default_rng(1).normal(size=(3, cfg.chunk, 5)).astype(np.float32)
    mask = np.ones((3, cfg.chunk), np.float32)
    mask[0, 2:] = 0
    deltas[0, 2:] = np.nan  # padding past a segment's end is ignored, whatever it holds
    loss = policy.loss({**obs, "deltas": deltas, "mask": mask})
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    chunk = policy.predict_chunk(obs)
    assert chunk.shape == (3, cfg.chunk, 5) and chunk.dtype == np.float32
    assert np.all(np.abs(chunk) <= 1.0)


def test_loss_decreases_on_a_fixed_batch():
    torch.manual_seed(0)
    cfg = PolicyConfig(**STATE_ONLY)
    policy = VLAPolicy(cfg)
    obs = observations(cfg, 16)
    deltas = np.random.default_rng(2).normal(scale=0.1, size=(16, cfg.chunk, 5)).astype(np.float32)
    policy.set_normalization(normalization_stats(obs["proprio"], deltas, egg=obs["egg"]))
    losses = fit(policy, {**obs, "deltas": deltas}, 50)
    assert losses[-1] < losses[0] - 20


def test_the_mixture_mode_picks_one_of_two_modes_instead_of_their_mean():
    torch.manual_seed(0)
    cfg = PolicyConfig(**{**STATE_ONLY, "chunk": 2, "execute": 1})
    policy = VLAPolicy(cfg)
    n = 64
    obs = {
        "proprio": centred_proprio(n),
        "egg": np.zeros((n, 13), np.float32),
        "time": np.zeros(n, np.float32),
    }
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0).astype(np.float32)
    deltas = demo_deltas(0.5 * signs, cfg.chunk, seed=5)
    assert abs(deltas.mean()) < 0.02  # what a regression head would predict
    policy.set_normalization(normalization_stats(obs["proprio"], deltas, egg=obs["egg"]))
    fit(policy, {**obs, "deltas": deltas}, 150)
    predicted = (
        policy.predict_chunk({k: v[:2] for k, v in obs.items()})
        - command_as_action(obs["proprio"][:2])[:, None]
    )
    assert np.all(np.abs(predicted) > 0.35), predicted
    # One mode for the whole chunk: all dims on the same side, not a per-dim mixture.
    assert np.all(np.sign(predicted) == np.sign(predicted.flat[0]))
    mixture = policy(obs).mixture
    sample = mixture.sample(torch.Generator().manual_seed(0))
    assert sample.shape == (n, cfg.chunk * 5)


def test_absolute_mode_predicts_poses_where_delta_mode_adds_the_last_command():
    """The same weights read as poses (``action_mode="absolute"``) or as changes from the previous
    command; the training targets follow the same reading."""
    obs = observations(PolicyConfig(**STATE_ONLY), 6)
    deltas = np.random.default_rng(4).normal(scale=0.05, size=(6, 4, 5)).astype(np.float32)
    command = command_as_action(obs["proprio"])
    policies = {}
    for mode in ("delta", "absolute"):
        torch.manual_seed(0)
        policies[mode] = VLAPolicy(PolicyConfig(**STATE_ONLY, action_mode=mode))
        policies[mode].set_normalization(normalization_stats(obs["proprio"], deltas, egg=obs["egg"]))
    np.testing.assert_allclose(
        policies["delta"].predict_chunk(obs),
        np.clip(policies["absolute"].predict_chunk(obs) + command[:, None], -1, 1),
        atol=1e-6,
    )
    batch = {**obs, "deltas": deltas}
    np.testing.assert_allclose(
        policies["absolute"].targets(batch).numpy(), (deltas + command[:, None]).reshape(6, -1), atol=1e-6
    )
    stats = normalization_stats(obs["proprio"], deltas, action_mode="absolute")
    np.testing.assert_allclose(
        stats["delta_mean"], (deltas + command[:, None]).reshape(6, -1).mean(0), atol=1e-6
    )


def test_film_makes_the_instruction_select_the_motion():
    torch.manual_seed(0)
    cfg = PolicyConfig(**{**STATE_ONLY, "use_language": True, "chunk": 2, "execute": 1})
    policy = VLAPolicy(cfg)
    n = 32
    instructions = [SCOOP, FLIP] * (n // 2)
    obs = {
        "proprio": centred_proprio(n),
        "egg": np.zeros((n, 13), np.float32),
        "instruction": instructions,
        "time": np.zeros(n, np.float32),
    }
    target = np.array([0.4 if t == SCOOP else -0.4 for t in instructions], np.float32)
    deltas = demo_deltas(target, cfg.chunk, seed=6)
    policy.set_normalization(normalization_stats(obs["proprio"], deltas, egg=obs["egg"]))
    fit(policy, {**obs, "deltas": deltas}, 100)
    predicted = (
        policy.predict_chunk({k: v[:2] for k, v in obs.items()})
        - command_as_action(obs["proprio"][:2])[:, None]
    )
    assert np.all(predicted[0] > 0.2) and np.all(predicted[1] < -0.2), predicted
    # Precomputed embeddings (a trainer's shortcut past the encoder) give the same actions.
    language = policy.encode_language(instructions[:2])
    again = policy.predict_chunk(
        {"proprio": obs["proprio"][:2], "egg": obs["egg"][:2], "language": language, "time": obs["time"][:2]}
    )
    np.testing.assert_array_equal(again - command_as_action(obs["proprio"][:2])[:, None], predicted)


def test_film_input_scale_divides_the_embedding_and_older_checkpoints_load_unscaled(tmp_path):
    torch.manual_seed(0)
    cfg = PolicyConfig(**{**STATE_ONLY, "use_language": True})
    plain = VLAPolicy(cfg)
    with torch.no_grad():
        plain.film.weight.normal_()  # FiLM starts as the identity; give it some effect
    obs = observations(cfg, 4)
    scaled = VLAPolicy(PolicyConfig(**{**cfg.to_dict(), "film_scale_input": True}))
    scaled.load_state_dict(plain.state_dict())  # same layout: only the input differs
    with torch.no_grad():
        scaled.film.weight.mul_(384**0.5)
    np.testing.assert_allclose(scaled.predict_chunk(obs), plain.predict_chunk(obs), atol=1e-5)
    # A checkpoint written before the setting existed has no such key: it loads unscaled.
    plain.save_pretrained(tmp_path)
    meta = json.loads((tmp_path / "config.json").read_text())
    del meta["config"]["film_scale_input"]
    (tmp_path / "config.json").write_text(json.dumps(meta))
    loaded = VLAPolicy.from_pretrained(tmp_path)
    assert not loaded.config.film_scale_input
    np.testing.assert_array_equal(loaded.predict_chunk(obs), plain.predict_chunk(obs))


def test_language_input_lets_the_trunk_tell_instructions_apart_from_the_first_step():
    """FiLM starts as the identity, so a fresh policy acts the same whatever it is told; with
    language_input the trunk's first layer reads the instruction, and it does not."""
    obs = observations(PolicyConfig(**STATE_ONLY), 2)
    obs = {k: np.repeat(v[:1], 2, axis=0) for k, v in obs.items() if k != "instruction"}  # one state
    for language_input in (False, True):
        torch.manual_seed(0)
        policy = VLAPolicy(
            PolicyConfig(**{**STATE_ONLY, "use_language": True, "language_input": language_input})
        )
        chunk = policy.predict_chunk({**obs, "instruction": [SCOOP, FLIP]})
        assert (
            np.abs(chunk[0] - chunk[1]).max() > 1e-4
            if language_input
            else np.allclose(chunk[0], chunk[1], atol=1e-6)
        )
    with pytest.raises(PolicyConfigError, match="language_input needs use_language"):
        VLAPolicy(PolicyConfig(**{**STATE_ONLY, "use_language": False, "language_input": True}))


def test_language_embeddings_are_cached_and_load_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    encoder = LanguageEncoder(default_language_model())
    first = encoder([SCOOP, FLIP, SCOOP])
    assert first.shape == (3, 384)
    assert torch.allclose(first.norm(dim=-1), torch.ones(3))
    assert torch.equal(first[0], first[2])
    assert encoder.model_calls == 2 and set(encoder.cache) == {SCOOP, FLIP}
    second = encoder([FLIP, SCOOP])
    assert encoder.model_calls == 2
    assert torch.equal(second, first[[1, 0]])
    assert not any(p.requires_grad for p in encoder.model.parameters())


def test_a_vision_backbone_by_path_runs_and_round_trips(vision_dir, tmp_path):
    torch.manual_seed(0)
    cfg = PolicyConfig(
        use_image=True,
        use_egg_state=False,
        vision=str(vision_dir),
        image_size=32,
        hidden=32,
        use_language=False,
        freeze_vision=True,
    )
    policy = VLAPolicy(cfg)
    backbone = policy.vision.backbone
    assert not any(p.requires_grad for p in backbone.parameters())
    policy.train()
    assert not backbone.training  # frozen: stays in eval mode
    obs = observations(cfg, 2)
    obs["image"] = np.random.default_rng(3).integers(0, 256, (2, 48, 48, 3), dtype=np.uint8)  # resized
    loss = policy.loss({**obs, "deltas": np.zeros((2, cfg.chunk, 5), np.float32)})
    loss.backward()
    assert policy.vision.projection.weight.grad is not None
    policy.save_pretrained(tmp_path / "ckpt")
    loaded = VLAPolicy.from_pretrained(tmp_path / "ckpt")
    np.testing.assert_array_equal(loaded.predict_chunk(obs), policy.predict_chunk(obs))


def test_save_and_load_give_bitwise_identical_actions(tmp_path):
    torch.manual_seed(0)
    cfg = PolicyConfig(use_image=True, hidden=64, image_size=32, chunk=6, execute=3)
    policy = VLAPolicy(cfg)
    rng = np.random.default_rng(4)
    policy.set_normalization(
        {
            "proprio_mean": rng.normal(size=15),
            "proprio_std": rng.uniform(0.0, 2.0, size=15),
            "egg_std": rng.uniform(0.5, 2.0, size=13),
            "delta_std": rng.uniform(0.01, 0.1, size=5),
        }
    )
    directory = tmp_path / "policy"
    policy.save_pretrained(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["config.json", "model.safetensors"]
    from safetensors.torch import load_file

    assert not any("language" in k for k in load_file(directory / "model.safetensors"))
    loaded = VLAPolicy.from_pretrained(directory)
    assert loaded.config == cfg
    assert torch.all(loaded.proprio_std >= 1e-2)  # the floor is applied and stored
    policy.eval()
    policy.reset(3)
    loaded.reset(3)
    for step in range(7):
        obs = observations(cfg, 3, seed=step)
        a, b = policy.act(obs), loaded.act(obs)
        assert a.shape == (3, 5)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("damage", ["hidden", "unknown_key", "format_version", "no_weights", "bad_weights"])
def test_incompatible_checkpoints_raise_a_clear_error(tmp_path, damage):
    directory = tmp_path / "broken"
    VLAPolicy(PolicyConfig(**STATE_ONLY)).save_pretrained(directory)
    meta = json.loads((directory / "config.json").read_text())
    if damage == "hidden":
        meta["config"]["hidden"] = 32
        expect = "shape"
    elif damage == "unknown_key":
        meta["config"]["layers"] = 3
        expect = "layers"
    elif damage == "format_version":
        meta["format_version"] = 99
        expect = "format version"
    elif damage == "no_weights":
        (directory / "model.safetensors").unlink()
        expect = "model.safetensors is missing"
    else:
        (directory / "model.safetensors").write_bytes(b"not a safetensors file")
        expect = "does not load"
    (directory / "config.json").write_text(json.dumps(meta))
    with pytest.raises(PolicyConfigError, match=expect) as error:
        VLAPolicy.from_pretrained(directory)
    assert str(directory) in str(error.value) and "\n" not in str(error.value)


def test_a_missing_checkpoint_directory_raises(tmp_path):
    with pytest.raises(PolicyConfigError, match="no such directory") as error:
        VLAPolicy.from_pretrained(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(error.value)


def test_act_executes_chunks_open_loop_and_reset_clears_the_queue():
    torch.manual_seed(0)
    cfg = PolicyConfig(**{**STATE_ONLY, "chunk": 8, "execute": 4})
    policy = VLAPolicy(cfg)
    calls = []
    policy.register_forward_pre_hook(lambda module, args: calls.append(len(args[0]["proprio"])))
    policy.reset(5)
    obs = observations(cfg, 5)
    plan = policy.predict_chunk(obs)
    calls.clear()
    actions = [policy.act(observations(cfg, 5, seed=s)) for s in range(10)]
    assert calls == [5, 5, 5]  # steps 0, 4 and 8, the whole batch each time
    for a in actions:
        assert a.shape == (5, 5) and np.all(np.abs(a) <= 1.0)
    # The first four actions are the chunk planned from the first observation, in order.
    np.testing.assert_array_equal(np.stack(actions[:4], axis=1), plan[:, :4])
    policy.reset(5)
    policy.act(obs)
    assert len(calls) == 4  # a fresh plan right after reset, mid-chunk


def test_predict_end_learns_where_demos_end_and_an_ended_episode_holds_its_command():
    """Samples whose egg state says "done" have a demo that ends after 2 of the chunk's 4 steps
    (mask 1, 1, 0, 0); the others go on. The end head learns that split, and in closed loop an
    episode whose re-plan predicts an end holds its last action while the others follow the plan."""
    torch.manual_seed(0)
    cfg = PolicyConfig(**{**STATE_ONLY, "predict_end": True})
    policy = VLAPolicy(cfg)
    batch = observations(cfg, 256, seed=1)
    done = np.arange(256) % 2 == 0
    batch["egg"][:, 0] = np.where(done, 1.5, -1.5)
    batch["deltas"] = demo_deltas(np.full(256, 0.3, np.float32), cfg.chunk, seed=1)
    batch["mask"] = np.where(done[:, None], [1, 1, 0, 0], [1, 1, 1, 1]).astype(np.float32)
    losses = fit(policy, batch, steps=300)
    assert losses[-1] < losses[0]
    _, end = policy.predict(batch)
    assert end.shape == (256, cfg.chunk)
    assert np.mean(end[done, 2:] > 0.5) > 0.95 and np.mean(end[done, :2] < 0.5) > 0.95
    assert np.mean(end[~done] < 0.5) > 0.95

    obs = observations(cfg, 8, seed=2)
    obs["egg"][:, 0] = np.where(np.arange(8) < 4, 1.5, -1.5)  # the first four are done
    del obs["time"]
    policy.reset(8)
    plan = policy.predict({**obs, "time": np.zeros(8, np.float32)})[0]
    actions = np.stack([policy.act(obs) for _ in range(6)], axis=1)
    hold = command_as_action(obs["proprio"])
    np.testing.assert_allclose(actions[:4], np.broadcast_to(hold[:4, None], (4, 6, 5)), atol=1e-6)
    np.testing.assert_allclose(actions[4:, :2], plan[4:, :2], atol=1e-6)
    assert np.abs(actions[4:, 0] - hold[4:]).max() > 0.05  # the others move


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_input_noise_perturbs_the_state_in_training_only(noise):
    torch.manual_seed(0)
    cfg = PolicyConfig(**{**STATE_ONLY, "input_noise": noise})
    policy = VLAPolicy(cfg)
    obs = observations(cfg, 4)
    policy.train()
    first, second = policy(obs).mixture.means, policy(obs).mixture.means
    assert torch.equal(first, second) == (noise == 0.0)
    policy.eval()
    assert torch.equal(policy(obs).mixture.means, policy(obs).mixture.means)


def test_random_shift_is_a_crop_of_the_border_padded_image():
    images = torch.randint(0, 256, (64, 8, 8, 3), dtype=torch.uint8)
    shifted = random_shift(images, 2, torch.Generator().manual_seed(0))
    assert shifted.dtype == torch.uint8 and shifted.shape == images.shape
    padded = torch.nn.functional.pad(images.permute(0, 3, 1, 2).float(), (2, 2, 2, 2), mode="replicate")
    offsets = set()
    for image, out in zip(padded, shifted, strict=True):
        crops = [
            (dy, dx)
            for dy in range(5)
            for dx in range(5)
            if torch.equal(image[:, dy : dy + 8, dx : dx + 8].permute(1, 2, 0).to(torch.uint8), out)
        ]
        assert len(crops) == 1  # random pixels: exactly one window matches
        offsets.add(crops[0])
    assert len(offsets) > 10  # each image draws its own offset, over the whole range
    assert {dy for dy, _ in offsets} == set(range(5)) and {dx for _, dx in offsets} == set(range(5))
    assert random_shift(images, 0) is images


def test_image_shift_moves_the_camera_image_in_training_only():
    torch.manual_seed(0)
    cfg = PolicyConfig(use_image=True, image_size=16, use_language=False, hidden=32, image_shift=3)
    policy = VLAPolicy(cfg)
    seen = []
    policy.vision.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone()))
    obs = observations(cfg, 4)
    policy.train()
    policy(obs)
    policy.eval()
    policy(obs)
    original = torch.as_tensor(obs["image"])
    assert not torch.equal(seen[0], original) and torch.equal(seen[1], original)


def test_egg_aux_teaches_the_camera_features_where_the_egg_is():
    """A bright square at the egg's (x, y): the probe learns to read it, the policy's inputs stay
    the same (no egg state), and without ``egg_aux`` there is no probe and no extra loss."""
    rng = np.random.default_rng(0)
    n, size = 64, 16
    egg = np.zeros((n, 13), np.float32)
    egg[:, :2] = rng.uniform(-1, 1, (n, 2))
    images = np.zeros((n, size, size, 3), np.uint8)
    for image, (x, y) in zip(images, egg[:, :2], strict=True):
        row, col = int((y + 1) / 2 * (size - 3)), int((x + 1) / 2 * (size - 3))
        image[row : row + 3, col : col + 3] = 255
    base = dict(
        use_image=True,
        use_egg_state=False,
        image_size=size,
        use_language=False,
        hidden=32,
        chunk=2,
        execute=1,
    )
    obs = {"proprio": centred_proprio(n), "time": np.zeros(n, np.float32), "image": images}
    batch = {**obs, "egg": egg, "deltas": np.zeros((n, 2, 5), np.float32)}

    plain = VLAPolicy(PolicyConfig(**base))
    assert plain.egg_probe is None and plain(obs).egg_position is None

    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(**base, egg_aux=1.0))
    policy.set_normalization({"egg_mean": egg.mean(0), "egg_std": egg.std(0) + 1e-3})
    target = torch.as_tensor((egg[:, :2] - egg[:, :2].mean(0)) / (egg[:, :2].std(0) + 1e-3))
    before = ((policy(obs).egg_position[:, :2] - target) ** 2).mean().item()
    fit(policy, batch, steps=300)
    policy.eval()
    after = ((policy(obs).egg_position[:, :2] - target) ** 2).mean().item()
    assert before > 0.5 and after < 0.1 * before  # unit-variance targets: the probe reads the square
    with pytest.raises(KeyError, match="'egg'"):
        policy.loss({k: v for k, v in batch.items() if k != "egg"})


def test_act_feeds_the_episode_time_it_counts_since_reset():
    cfg = PolicyConfig(**{**STATE_ONLY, "chunk": 4, "execute": 2, "control_hz": 50.0})
    policy = VLAPolicy(cfg)
    times = []
    policy.register_forward_pre_hook(lambda module, args: times.append(np.asarray(args[0]["time"]).tolist()))
    obs = observations(cfg, 2)
    del obs["time"]  # the explorer's observations carry no time
    policy.reset(2)
    for _ in range(5):
        policy.act(obs)
    policy.reset(2)
    policy.act(obs)
    np.testing.assert_allclose(times, [[0.0, 0.0], [0.04, 0.04], [0.08, 0.08], [0.0, 0.0]], rtol=1e-6)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (dict(chunk=4, execute=5), "execute"),
        (dict(image_size=8), "image_size"),
        (dict(components=0), "components"),
        (dict(hidden=True), "hidden"),
        (dict(min_std=0.0), "min_std"),
        (dict(control_hz=0), "control_hz"),
        (dict(action_mode="velocity"), "action_mode"),
        (dict(end_threshold=1.0), "end_threshold"),
        (dict(input_noise=-0.1), "input_noise"),
        (dict(image_size=16, image_shift=8), "image_shift"),
        (dict(egg_aux=-1.0), "egg_aux"),
    ],
)
def test_invalid_configs_name_the_field(overrides, field):
    with pytest.raises(PolicyConfigError, match=f"PolicyConfig.{field}"):
        PolicyConfig(**overrides)


def test_config_round_trips_through_json():
    cfg = PolicyConfig(use_image=False, use_egg_state=True, chunk=6, execute=2, dropout=0.1)
    assert PolicyConfig.from_json(cfg.to_json()) == cfg
    assert PolicyConfig.from_dict({"min_std": 1}).min_std == 1.0
    with pytest.raises(PolicyConfigError, match="unknown PolicyConfig field"):
        PolicyConfig.from_dict({"heads": 2})


def test_mixture_nll_ignores_masked_dims():
    mixture = GaussianMixture(torch.zeros(1, 1), torch.zeros(1, 1, 2), torch.zeros(1, 1, 2))
    one_dim = GaussianMixture(torch.zeros(1, 1), torch.zeros(1, 1, 1), torch.zeros(1, 1, 1))
    masked = mixture.nll(torch.tensor([[0.3, float("inf")]]), torch.tensor([[1.0, 0.0]]))
    assert torch.allclose(masked, one_dim.nll(torch.tensor([[0.3]])))


def test_act_feeds_the_episode_time_it_counts_itself():
    """Demos that wait a varying while look alike until they move: the policy reads how long the
    episode has run (its own step count at control_hz), and reset starts the clock again."""
    cfg = PolicyConfig(use_language=False, hidden=32, execute=4, predict_end=False)
    policy = VLAPolicy(cfg)
    seen = []
    original = policy.predict

    def spy(obs):
        seen.append(obs["time"].copy())
        return original(obs)

    policy.predict = spy
    obs = {"proprio": centred_proprio(3), "egg": np.zeros((3, 13), np.float32)}
    policy.reset(3)
    for _ in range(9):
        policy.act(obs)
    assert [float(t[0]) for t in seen] == pytest.approx([0.0, 4 / 50, 8 / 50])
    policy.reset(3)
    policy.act(obs)
    assert float(seen[-1][0]) == 0.0


def test_a_pickled_policy_leaves_the_language_model_behind_and_keeps_its_cache():
    import pickle

    policy = VLAPolicy(PolicyConfig(hidden=32, execute=4, predict_end=False))
    policy.encode_language([SCOOP])
    blob = pickle.dumps(policy)
    assert len(blob) < 5_000_000  # the MiniLM weights (~90 MB) are not in it
    clone = pickle.loads(blob)
    torch.testing.assert_close(clone.encode_language([SCOOP]), policy.encode_language([SCOOP]))
    assert clone.language_encoder.model_calls == policy.language_encoder.model_calls  # from the cache
    clone.encode_language(["stir the egg very gently"])  # an unseen text reloads the model from its path
    assert clone.language_encoder.model is not None
