"""The torch.compile backend: dynamo's and aot_autograd's graphs, each
imported, lowered and compiled in a worker, and checked against eager."""
