"""Depth camera -> world points -> open3d crop and voxel downsample -> a fixed number of points.

Points are returned in the pan frame (m from the pan surface centre), cropped to the workspace
above the pan, voxel-downsampled to even out the density of near and far surfaces, then brought to
exactly ``num_points`` by farthest-point sampling (or by cycling through the points when the view
holds fewer, which keeps the observation deterministic and leaves the env's generator alone).
"""

from __future__ import annotations

import mujoco
import numpy as np

from robo_coevolve.env.rendering import SceneRenderer

WORKSPACE_LOW = (-0.2, -0.2, 0.001)  # m, pan frame; 1 mm up leaves out the bare pan surface
WORKSPACE_HIGH = (0.2, 0.2, 0.35)


class DepthPointCloud:
    """A fixed-size point cloud of the workspace seen by one camera."""

    def __init__(
        self,
        model: mujoco.MjModel,
        camera: str = "policy",
        resolution: int = 64,
        num_points: int = 256,
        voxel_size: float = 0.004,
        low=WORKSPACE_LOW,
        high=WORKSPACE_HIGH,
    ):
        import open3d as o3d  # deferred: a ~1 s import only runs when point clouds are asked for

        self._o3d = o3d
        self.num_points = num_points
        self.voxel_size = voxel_size
        self._renderer = SceneRenderer(model, resolution, resolution, camera)
        self._camera_id = model.camera(camera).id
        self._pan_body = model.body("pan").id
        fovy = np.deg2rad(model.cam_fovy[self._camera_id])
        focal = 0.5 * resolution / np.tan(fovy / 2)
        pixels = np.arange(resolution) + 0.5 - resolution / 2
        u, v = np.meshgrid(pixels, pixels)
        # MuJoCo cameras look along -z with y up; image rows run downwards.
        self._rays = np.stack([u / focal, -v / focal, -np.ones_like(u)], axis=-1).reshape(-1, 3)
        self._box = o3d.geometry.AxisAlignedBoundingBox(np.asarray(low, float), np.asarray(high, float))

    def __call__(self, data: mujoco.MjData) -> np.ndarray:
        """(num_points, 3) float32 points, m, in the pan frame."""
        depth = self._renderer.depth(data).reshape(-1)
        points_cam = self._rays * depth[:, None]
        rot = data.cam_xmat[self._camera_id].reshape(3, 3)
        world = points_cam @ rot.T + data.cam_xpos[self._camera_id]
        local = world - data.xpos[self._pan_body]
        cloud = self._o3d.geometry.PointCloud(self._o3d.utility.Vector3dVector(local))
        cloud = cloud.crop(self._box).voxel_down_sample(self.voxel_size)
        n = len(cloud.points)
        if n > self.num_points:
            cloud = cloud.farthest_point_down_sample(self.num_points)
        points = np.asarray(cloud.points, dtype=np.float32)
        if n == 0:
            return np.zeros((self.num_points, 3), np.float32)
        if n < self.num_points:
            points = points[np.arange(self.num_points) % n]
        return points

    def close(self) -> None:
        self._renderer.close()
