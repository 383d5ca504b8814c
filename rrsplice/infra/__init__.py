"""Infrastructure: the model cache, project settings, atomic file writes, external
tools (ptxas, nvlink) and GPU architecture names."""
