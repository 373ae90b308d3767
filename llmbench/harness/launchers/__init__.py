"""The launcher axis: how a spec runs as processes (harness/launchers/base.py), one module per kind —
`process` (the local process every case runs in) and `torchrun` (a case's ranks)."""
