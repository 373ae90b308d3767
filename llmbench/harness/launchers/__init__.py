"""The launcher axis: how a case runs as processes. `base` is what every launcher is and the registry a
run picks one from by name (`local`, `ray`); `torchrun` and `replicas` are how a case process runs its
ranks or its copies, chosen by the case's scenario and placement."""
