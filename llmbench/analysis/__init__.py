"""What is computed from result sets: comparisons, pooling, spread, the gate, the noise floor, projection,
cost, MIG slices, bottleneck and power answers, code-path diffs, GPU-pair answers, and the loading of
result sets. It returns typed objects; `llmbench.report` renders them and imports from here, never the
reverse."""
