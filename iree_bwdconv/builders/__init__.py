"""What the rewrite patterns build: each gradient's linalg forms (the
contractions, gathers, weaves and sums) from a plan, with the bindings'
builders, and the torch-dialect reads and casts at the op's boundary."""
