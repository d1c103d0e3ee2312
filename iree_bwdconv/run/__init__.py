"""Running compiled modules: the IREE runtime with torch tensors in and out,
and the CPU's thread settings around it."""
