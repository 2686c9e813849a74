"""Step 1, capture: torch.export with tonnx's dynamic shapes, names and keyword inputs."""
