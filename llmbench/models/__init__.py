"""Model architectures as data (presets) and the code that builds them with random or pretrained
weights. `presets` imports nothing heavy; `build` and `accuracy` import torch inside functions."""
