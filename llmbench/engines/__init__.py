"""Inference/training engines, one module each, registered with `@ENGINES.register("name")`.
Heavy engine packages are imported lazily, inside methods, never at module import."""
