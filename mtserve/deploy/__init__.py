"""Running mtserve beyond one process: Ray Serve replicas (``ray_serve``)."""
