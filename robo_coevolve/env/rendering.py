"""Offscreen rendering of the egg-flip scene: fast policy frames and pretty video frames.

Policy frames turn shadows and reflections off (~40x faster with software EGL here: ~1,600
frames/s at 64x64 instead of ~40); video frames keep them. Set ``MUJOCO_GL`` before mujoco is
first imported (robo_coevolve defaults it to ``egl``).
"""

from __future__ import annotations

import mujoco
import numpy as np

HIDDEN_GROUP = 3  # geom group of collision-only geoms (the pan rim's boxes)


class SceneRenderer:
    """Renders one camera of a model at a fixed size.

    Args:
        model: the compiled scene.
        width, height: pixels.
        camera: a camera name of the scene (``policy``, ``overview``, ``side``).
        pretty: shadows and reflections on (videos) or off (policy frames).
    """

    def __init__(self, model: mujoco.MjModel, width: int, height: int, camera: str, pretty: bool = False):
        if camera not in [model.camera(i).name for i in range(model.ncam)]:
            known = [model.camera(i).name for i in range(model.ncam)]
            raise ValueError(f"unknown camera {camera!r}: the scene has {known}")
        max_w, max_h = model.vis.global_.offwidth, model.vis.global_.offheight
        if width > max_w or height > max_h:
            raise ValueError(
                f"render size {width}x{height} exceeds the scene's offscreen buffer "
                f"{max_w}x{max_h}: lower it or raise <visual><global offwidth/offheight>"
            )
        self.camera = camera
        # The render context reads the multisampling setting when it is created: fast frames
        # skip it (~3x faster under software GL), videos keep the scene's.
        samples = model.vis.quality.offsamples
        if not pretty:
            model.vis.quality.offsamples = 0
        try:
            self._renderer = mujoco.Renderer(model, height=height, width=width)
        finally:
            model.vis.quality.offsamples = samples
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = pretty
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = pretty
        self._options = mujoco.MjvOption()
        self._options.geomgroup[HIDDEN_GROUP] = 0
        self._depth = False

    def rgb(self, data: mujoco.MjData) -> np.ndarray:
        """(height, width, 3) uint8 image."""
        self._set_depth(False)
        self._renderer.update_scene(data, camera=self.camera, scene_option=self._options)
        return self._renderer.render()

    def depth(self, data: mujoco.MjData) -> np.ndarray:
        """(height, width) float32 distance along the camera axis, m."""
        self._set_depth(True)
        self._renderer.update_scene(data, camera=self.camera, scene_option=self._options)
        return self._renderer.render().astype(np.float32)

    def _set_depth(self, on: bool) -> None:
        if on != self._depth:
            (self._renderer.enable_depth_rendering if on else self._renderer.disable_depth_rendering)()
            self._depth = on

    def close(self) -> None:
        self._renderer.close()


class StateRenderer:
    """Policy-camera frames of stored sim states (a library's, a segment's), any task geometry:
    one compiled scene and fast renderer per (pan height, egg size), nothing re-simulated."""

    def __init__(self, size: int, camera: str = "policy"):
        self.size = size
        self.camera = camera
        self._by_geometry: dict[tuple[float, float], tuple] = {}

    def render(self, task, state: np.ndarray) -> np.ndarray:
        """(size, size, 3) uint8 frame of ``state``, a full integration state of ``task``'s scene."""
        from robo_coevolve.env.physics import EggFlipPhysics  # physics is the heavier import

        key = (task.pan_height, task.egg_size)
        if key not in self._by_geometry:
            physics = EggFlipPhysics(task)
            self._by_geometry[key] = physics, SceneRenderer(physics.model, self.size, self.size, self.camera)
        physics, renderer = self._by_geometry[key]
        physics.set_state(state)
        return renderer.rgb(physics.data)

    def close(self) -> None:
        for _, renderer in self._by_geometry.values():
            renderer.close()
        self._by_geometry.clear()
