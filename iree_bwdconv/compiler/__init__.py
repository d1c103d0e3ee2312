"""Every step that involves IREE's compiler: the one place that runs pass
pipelines and iree-compile (`pipeline`), IREE's faults as named records
with their reproducers (`iree_faults`, `reproducers/`), the steps that keep
those faults away from a module before or after iree-compile, the link of
our CUDA kernels, the compile fallback and the compiled-module cache."""
