"""The fragment family: NVIDIA fragment layouts, fragment maps of each phase, their
pictures and reports, and the layer descriptor."""
