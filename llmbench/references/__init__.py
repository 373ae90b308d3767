"""Cases described as data, like suite files: the published figures transcribed as llmbench cases
(with their sources and how closely they match), the published ratio claims, and the headline
workloads of the H100-vs-A100 answer (which llmbench case stands for which question). Data may name
scenarios and their params; the analysis and report that read it do not."""
