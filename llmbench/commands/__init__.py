"""CLI commands, one module each with `register(app)`: the command layer on top of everything else."""
