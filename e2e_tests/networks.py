"""Seeded random networks: small DAGs of the layers CNNs are built from,
for checking whole graphs, not single ops, against eager PyTorch.

Single-op cases cannot catch a fault that needs two ops: two convolutions
reading one computed tensor, a residual add, a concatenation, a batch norm
in train mode between convolutions. Each network here is drawn from a seed
and an index: 3-7 layers over one input, each layer reading one or two
earlier tensors (often one that another layer already reads), so tensors are shared, added, concatenated and read by several
convolutions of every kind the lowering forms: plain, strided, dilated,
1x1, grouped, depthwise and transposed, in 1, 2 or 3 spatial dims, with
batch norm in train or eval mode and elementwise ops between them. The
network returns every tensor no layer read.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch
from torch import nn

SEED = 20261127
RANKS = (1, 2, 2, 2, 3)
# The largest spatial size of any tensor, per rank: small enough that
# every network compiles and runs in about a second.
MAX_SIZE = {1: 16, 2: 12, 3: 6}
CHANNELS = (2, 3, 4, 6, 8)
_CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
_CONV_TRANSPOSE = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}
_BATCH_NORM = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}


@dataclass(frozen=True)
class Shape:
    channels: int
    spatial: tuple[int, ...]


class Centered(nn.Module):
    """x minus its mean over the batch and positions: a computed tensor that
    is no convolution's output, as a train-mode batch norm's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dims = (0, *range(2, x.dim()))
        return x - x.mean(dim=dims, keepdim=True)


class SqueezeExcite(nn.Module):
    """x scaled per channel by the sigmoid of its spatial mean, as
    MobileNetV3's and EfficientNet's blocks do (without their 1x1 convs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x.mean(dim=tuple(range(2, x.dim())), keepdim=True))


class Add(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


class Concat(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cat([a, b], dim=1)


_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU, "silu": nn.SiLU, "hardswish": nn.Hardswish, "centered": Centered, "se": SqueezeExcite,
}


@dataclass(frozen=True)
class Node:
    """One layer: what it is (for a failure's message), which earlier
    tensors it reads (0 is the input) and the shape it makes."""

    describe: str
    inputs: tuple[int, ...]
    shape: Shape


class Network(nn.Module):
    def __init__(self, name: str, rank: int, batch: int, input_shape: Shape, nodes: Sequence[Node],
                 layers: Sequence[nn.Module]) -> None:
        super().__init__()
        self.name, self.rank, self.batch, self.input_shape = name, rank, batch, input_shape
        self.nodes = tuple(nodes)
        self.layers = nn.ModuleList(layers)
        read = {i for node in self.nodes for i in node.inputs}
        self.outputs = tuple(i for i in range(1, len(self.nodes) + 1) if i not in read)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = [x]
        for node, layer in zip(self.nodes, self.layers):
            values.append(layer(*(values[i] for i in node.inputs)))
        return tuple(values[i] for i in self.outputs)

    def example_input(self, seed: int = 0) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        return torch.randn((self.batch, self.input_shape.channels, *self.input_shape.spatial), generator=generator)

    def describe(self) -> str:
        lines = [f"{self.name}: input {self.batch}x{self.input_shape.channels}x{self.input_shape.spatial}"]
        lines += [f"  t{i + 1} = {node.describe}({', '.join(f't{j}' for j in node.inputs)}) -> "
                  f"{node.shape.channels}x{node.shape.spatial}" for i, node in enumerate(self.nodes)]
        lines.append(f"  returns {', '.join(f't{i}' for i in self.outputs)}")
        return "\n".join(lines)


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int,
                               output_padding: int) -> int:
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


# Per kind of convolution: the kernel sizes and strides it draws from.
_CONVOLUTIONS = {
    "plain": ((1, 2, 3, 3), (1, 1, 2)),
    "strided": ((2, 3, 3), (2,)),
    "pointwise_strided": ((1,), (2, 3)),
    "grouped": ((1, 3, 3), (1, 2)),
    "depthwise": ((1, 3, 3, 5), (1, 2)),
    "transposed": ((1, 2, 3, 4), (1, 2, 2)),
}


def _groups_and_outputs(rng: random.Random, channels: int, grouping: str) -> tuple[int, int]:
    """(groups, output channels) for a convolution of `channels` inputs."""
    if grouping == "depthwise":
        return channels, channels * rng.choice((1, 2))
    divisors = [g for g in (2, 3, 4) if channels % g == 0]
    if grouping == "grouped" and divisors:
        groups = rng.choice(divisors)
        return groups, groups * rng.randint(1, 3)
    return 1, rng.choice(CHANNELS)


def _draw_convolution(rng: random.Random, rank: int, shape: Shape) -> Optional[tuple[str, nn.Module, Shape]]:
    kind = rng.choice(tuple(_CONVOLUTIONS))
    kernels, strides = _CONVOLUTIONS[kind]
    kernel, stride = rng.choice(kernels), rng.choice(strides)
    transposed = kind == "transposed"
    grouping = rng.choice(("plain", "plain", "grouped", "depthwise")) if transposed else kind
    groups, out_channels = _groups_and_outputs(rng, shape.channels, grouping)
    dilation = rng.choice((1, 1, 1, 2)) if kernel > 1 else 1
    padding = rng.randint(0, (dilation * (kernel - 1)) // 2 + (1 if rng.random() < 0.2 else 0))
    bias = rng.random() < 0.5
    settings = f"k{kernel} s{stride} p{padding} d{dilation}"
    if transposed:
        output_padding = rng.randrange(max(stride, dilation))
        spatial = tuple(conv_transpose_output_size(n, kernel, stride, padding, dilation, output_padding)
                        for n in shape.spatial)
        layer = _CONV_TRANSPOSE[rank](shape.channels, out_channels, kernel, stride, padding, output_padding,
                                      groups, bias, dilation)
        what = f"conv_transpose{rank}d({settings} op{output_padding} g{groups}{' bias' if bias else ''})"
    else:
        spatial = tuple(conv_output_size(n, kernel, stride, padding, dilation) for n in shape.spatial)
        layer = _CONV[rank](shape.channels, out_channels, kernel, stride, padding, dilation, groups, bias)
        what = f"conv{rank}d({settings} g{groups}{' bias' if bias else ''})"
    if min(spatial) < 1 or max(spatial) > MAX_SIZE[rank]:
        return None
    return what, layer, Shape(out_channels, spatial)


def _draw_batch_norm(rng: random.Random, rank: int, shape: Shape) -> tuple[str, nn.Module, Shape]:
    layer = _BATCH_NORM[rank](shape.channels)
    with torch.no_grad():
        layer.weight.uniform_(0.5, 1.5)
        layer.bias.uniform_(-0.5, 0.5)
    if rng.random() < 0.4:
        with torch.no_grad():
            layer.running_mean.uniform_(-0.5, 0.5)
            layer.running_var.uniform_(0.5, 2.0)
        return "batch_norm(eval)", layer.eval(), shape
    return "batch_norm(train)", layer, shape


def _pick(rng: random.Random, shapes: Sequence[Shape], read: set[int],
          wanted: Callable[[int], bool] = lambda i: True) -> Optional[int]:
    """An earlier tensor: a computed one that a layer already reads 40% of
    the time (where there is one), the input 10%, else mostly one of the
    last three."""
    candidates = [i for i in range(len(shapes)) if wanted(i)]
    computed = [i for i in candidates if i > 0]
    if not computed or (0 in candidates and rng.random() < 0.1):
        return 0 if 0 in candidates else None
    shared = [i for i in computed if i in read]
    if shared and rng.random() < 0.4:
        return rng.choice(shared)
    return rng.choice(computed[-3:] if rng.random() < 0.7 else computed)


def draw_network(index: int, seed: int = SEED) -> Network:
    """The network of `index` for `seed`, its weights too: the same in
    every process, whatever ran before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed * 100_003 + index)
        return _draw(random.Random(f"{seed}-{index}"), index)


def _draw(rng: random.Random, index: int) -> Network:
    rank = rng.choice(RANKS)
    smallest = {1: 6, 2: 5, 3: 3}[rank]
    shapes = [Shape(rng.choice(CHANNELS), tuple(rng.randint(smallest, MAX_SIZE[rank] - 2) for _ in range(rank)))]
    nodes: list[Node] = []
    layers: list[nn.Module] = []
    read: set[int] = set()
    wanted_layers = rng.randint(3, 7)
    while len(nodes) < wanted_layers:
        choice = rng.choices(("conv", "batch_norm", "activation", "add", "concat"), (8, 3, 3, 2, 1))[0]
        made: Optional[tuple[str, nn.Module, Shape]] = None
        inputs: tuple[int, ...] = ()
        first = _pick(rng, shapes, read)
        assert first is not None
        if choice == "conv":
            made, inputs = _draw_convolution(rng, rank, shapes[first]), (first,)
        elif choice == "batch_norm":
            made, inputs = _draw_batch_norm(rng, rank, shapes[first]), (first,)
        elif choice == "activation":
            name = rng.choice(tuple(_ACTIVATIONS))
            made, inputs = (name, _ACTIVATIONS[name](), shapes[first]), (first,)
        else:
            same = (lambda i: shapes[i] == shapes[first]) if choice == "add" else (
                lambda i: shapes[i].spatial == shapes[first].spatial)
            second = _pick(rng, shapes, read, lambda i: i != first and same(i))
            if second is not None and choice == "add":
                made, inputs = ("add", Add(), shapes[first]), (first, second)
            elif second is not None:
                joined = Shape(shapes[first].channels + shapes[second].channels, shapes[first].spatial)
                made, inputs = ("concat", Concat(), joined), (first, second)
        if made is None:
            continue
        what, layer, shape = made
        nodes.append(Node(what, inputs, shape))
        layers.append(layer)
        shapes.append(shape)
        read.update(inputs)
    return Network(f"network{index}_{rank}d_{len(nodes)}layers", rank, rng.choice((2, 3)), shapes[0], nodes, layers)


def networks(count: int, seed: int = SEED) -> list[Network]:
    return [draw_network(index, seed) for index in range(count)]


class Ensemble(nn.Module):
    """Networks side by side, each on its own input, compiled as one: a
    compile's fixed cost (tracing, iree-compile's start) shared by several
    networks, so that CI can afford a few hundred of them."""

    def __init__(self, members: Sequence[Network]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        first, last = members[0].name.split("_")[0], members[-1].name.split("_")[0]
        self.name = first if len(members) == 1 else f"{first}-{last.removeprefix('network')}"

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(out for member, x in zip(self.members, inputs) for out in member(x))

    def example_inputs(self) -> list[torch.Tensor]:
        return [member.example_input() for member in self.members]

    def describe(self) -> str:
        return "\n".join(member.describe() for member in self.members)


def ensembles(members: Sequence[Network], size: int) -> list[Ensemble]:
    return [Ensemble(members[i:i + size]) for i in range(0, len(members), size)]

