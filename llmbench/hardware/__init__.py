"""What the machine is: fingerprint, GPU spec table, NVML access, capability checks."""
