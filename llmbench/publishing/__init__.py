"""llmbench's own published pages: the README's answer table, the GPU-pair pages under results/,
results/report.html and the packaged reference data (`nox -s publish`). Built apart from the generic
report (`llmbench report`, `compare`), which names no GPU, with only the analysis and renderers any user
can call: `llmbench.analysis` computes, `llmbench.report` renders."""
