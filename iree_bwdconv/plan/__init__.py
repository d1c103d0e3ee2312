"""The plan: every form of every gradient of one convolution_backward,
decided in one place, before any IR is built.

Pure Python, like `geometry` (neither MLIR nor torch): `plan(spec,
options)` reads a validated spec and the options an edge made, and
returns a `Plan` that the patterns build from. Which pattern lowers an op
follows from the plan (`Plan.pattern`), not from pattern order. Each
decision names the rule that made it (`rules.RULES`, docs/forms.md), which
is what `iree-bwdconv explain` prints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from iree_bwdconv import geometry
from iree_bwdconv.kernels import catalog
from iree_bwdconv.options import LoweringOptions
from iree_bwdconv.spec import ConvBackwardSpec
from iree_bwdconv.plan import forward as _forward
from iree_bwdconv.plan import grad_input as gi
from iree_bwdconv.plan import grad_weight as gw
from iree_bwdconv.plan.forward import ForwardPlan, ForwardSpec
from iree_bwdconv.plan.grad_input import GradInputPlan
from iree_bwdconv.plan.grad_weight import GradBiasPlan, GradWeightPlan
from iree_bwdconv.plan.tuning import Tuning, for_target

__all__ = ["Plan", "GradInputPlan", "GradWeightPlan", "GradBiasPlan", "ForwardPlan", "ForwardSpec",
           "plan", "plan_forward", "plan_transposed_forward", "one_group_spec"]

# The pattern that builds each grad_input form (iree_bwdconv/patterns/).
PATTERN_OF_FORM = {"kernel": "convolution_backward_kernel", "phase-kernel": "convolution_backward_kernel",
                   "per-phase": "convolution_backward_phases",
                   "col2im": "convolution_backward_phases", "sub-pixel": "convolution_backward_phases",
                   "direct": "convolution_backward", "transposed": "convolution_backward", None: "convolution_backward"}


@dataclass(frozen=True)
class Plan:
    """spec: the op's; built: the spec each gradient's builder sees (one
    group's where `group_split`); rules: the name of every rule that
    decided, in the order it did (`rules.RULES`)."""

    spec: ConvBackwardSpec
    options: LoweringOptions
    tuning: Tuning
    group_split: bool
    built: ConvBackwardSpec
    grad_input: Optional[GradInputPlan]
    grad_weight: Optional[GradWeightPlan]
    grad_bias: Optional[GradBiasPlan]
    rules: tuple[str, ...]

    @property
    def pattern(self) -> str:
        """The pattern (iree_bwdconv/patterns/) that lowers the op."""
        return PATTERN_OF_FORM[self.grad_input.form if self.grad_input else None]


def one_group_spec(spec: ConvBackwardSpec) -> ConvBackwardSpec:
    """The spec of one group's convolution_backward, with groups=1."""
    g = spec.groups
    go, x, w = spec.grad_output_shape, spec.input_shape, spec.weight_shape
    return dataclasses.replace(spec, grad_output_shape=(go[0], go[1] // g, *go[2:]),
                               input_shape=(x[0], x[1] // g, *x[2:]), weight_shape=(w[0] // g, *w[1:]), groups=1)


def plan(spec: ConvBackwardSpec, options: LoweringOptions) -> Plan:
    """Every form of every gradient `spec` asks for, for `options`."""
    tuning = for_target(options.target)
    rules: list[str] = []
    split = _forward.group_split_applies(spec.groups, spec.in_channels, options, tuning)
    if split:
        rules.append("cpu_group_split")
    built = one_group_spec(spec) if split else spec
    grad_input = _grad_input(spec, built, options, tuning, rules) if spec.output_mask[0] else None
    grad_weight = _grad_weight(built, options, tuning, rules) if spec.output_mask[1] else None
    grad_bias = _grad_bias(spec, options, tuning, rules) if spec.output_mask[2] else None
    return Plan(spec, options, tuning, split, built, grad_input, grad_weight, grad_bias, tuple(rules))


def plan_forward(spec: ForwardSpec, options: LoweringOptions) -> ForwardPlan:
    """The form of a forward convolution (`forward.forward`)."""
    return _forward.forward(spec, options, for_target(options.target))


def plan_transposed_forward(spec: ConvBackwardSpec, options: LoweringOptions) -> tuple[Optional[Plan], str]:
    """A transposed convolution's forward, given as the spec of the
    convolution it transposes (`torch_ir.read_transposed_convolution`): the
    plan of that convolution's grad_input, which it is, where strided; None
    (torch-mlir's lowering) at stride 1, where no zeros are inserted, but
    where torch-mlir's lowering fails. The rule's name too."""
    if all(s == 1 for s in spec.stride):
        # One input channel a group: the convolution it transposes has one output channel a group.
        if spec.groups > 1 and spec.weight_shape[0] == spec.groups:
            rule = "transposed_forward_depthwise_stride_1"
        else:
            return None, "transposed_forward_torch_mlir"
    else:
        rule = "transposed_forward_phases"
    decided = plan(spec, options)
    return dataclasses.replace(decided, rules=(rule, *decided.rules)), rule


def _grad_input(spec: ConvBackwardSpec, built: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning,
                rules: list[str]) -> GradInputPlan:
    form, rule = gi.form(spec, options, tuning)
    rules.append(rule)
    in_f32 = form in gi.STRIDED_FORMS and gi.computes_in_f32(spec, form, options, tuning)
    on = {"half_in_f32": in_f32}
    fields: dict = {"form": form, "in_f32": in_f32}
    if form == "direct":
        fields.update(im2col_matmul=gi.direct_im2col_matmul(built, options, tuning),
                      weight_as_is=gi.direct_weight_as_is(built, options, tuning),
                      widened_windowless=gi.direct_widened(built, options, tuning))
        on.update(direct_im2col_matmul=fields["im2col_matmul"], direct_weight_as_is=fields["weight_as_is"],
                  windowless_widened=fields["widened_windowless"])
    elif form == "transposed":
        fields["transposed_form"], rules[-1] = gi.transposed_form(built, options, tuning)
        if fields["transposed_form"] == "windowless-conv":
            fields["widened_windowless"] = gi.direct_widened(built, options, tuning)
            on["windowless_widened"] = fields["widened_windowless"]
    elif form == "per-phase":
        live = gi.live_phases(built)[0]
        fields.update(_per_phase(built, live, in_f32, options, tuning))
        on["phase_tables_each"] = len(live) > 1 and gi.phase_tables_each(built, live, options, tuning)
        on.update(phase_one_matmul=fields["one_matmul"], phase_weight_first=fields["weight_first"],
                  phase_woven=bool(fields["woven_axes"]), phase_one_table=fields["one_table"],
                  phase_widened=bool(fields["widened_phases"]),
                  gpu_gather_weave=fields["gather_weave"],
                  phase_stored_in_place=fields["stored_in_place"],
                  phase_grouped_one_tap_gemm=fields["one_tap_gemm"] and built.groups > 1
                  and any(geometry.one_tap(phases) for phases in live),
                  phase_narrow_widened=in_f32 and gi.narrow_channels_on_gfx942(built, options, tuning))
    elif form == "kernel":
        on["kernel_padded_channels"] = catalog.padded_channels(spec.in_channels) != spec.in_channels
    elif form == "col2im":
        fields["images_first"] = options.on_gpu
        on["col2im_images_first"] = options.on_gpu
    rules.extend(name for name, fired in on.items() if fired)
    return GradInputPlan(**fields)


def _per_phase(spec: ConvBackwardSpec, live: list[gi.Phases], in_f32: bool, options: LoweringOptions,
               tuning: Tuning) -> dict:
    one_matmul = gi.phase_one_matmul(spec, options)
    fields = {"one_matmul": one_matmul, "weight_first": False,
              "one_tap_gemm": gi.phase_one_tap_gemm(spec, options, False), "woven_axes": (), "one_table": False,
              "widened_phases": frozenset(), "gather_weave": options.on_gpu, "stored_in_place": False}
    if one_matmul or not live:
        return fields
    if len(live) == 1:
        half = spec.dtype in ("f16", "bf16") and not in_f32
        fields["weight_first"] = gi.phase_weight_first(spec, options)
        fields["woven_axes"] = gi.woven_axes(spec, [ph.count for ph in live[0]], half, options)
        return fields
    fields["one_table"] = gi.phase_one_table(spec, live, options, tuning)
    fields["stored_in_place"] = gi.phase_stored_in_place(spec, live, options, tuning)
    fields["gather_weave"] = options.on_gpu and not fields["stored_in_place"]
    fields["one_tap_gemm"] = gi.phase_one_tap_gemm(spec, options, fields["stored_in_place"])
    fields["widened_phases"] = frozenset(gi.position_residues(phases) for phases in live
                                         if gi.phase_widened(spec, phases, options, tuning))
    return fields


def _grad_weight(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning, rules: list[str]) -> GradWeightPlan:
    image_split = gw.image_split(spec, options, tuning)
    if gw.rows_apply(spec, options, tuning):
        rules.append("weight_rows")
        if image_split > 1:
            rules.append("split_k")
        return GradWeightPlan("rows", image_split=image_split, rows_padding=gw.rows_padding(spec, tuning))
    by_im2col, rule = gw.by_im2col(spec, options, tuning)
    rules.append(rule)
    if not by_im2col:
        widened = gw.grouped_contraction_widened(spec, options, tuning)
        rules.extend(name for name, fired in (("split_k", image_split > 1), ("grouped_weight_widened", widened))
                     if fired)
        return GradWeightPlan("contraction", image_split=image_split, taps=tuple(spec.kernel), widened=widened)
    columns_first = gw.columns_first(spec, options, tuning)
    taps = gw.im2col_taps(spec, columns_first, options, tuning)
    split = gw.im2col_split(spec, options, tuning)
    unpadded = options.on_gpu
    named = options.target == "cpu"
    rules.extend(name for name, fired in (
        ("cpu_columns_first", columns_first), ("cpu_padded_taps", taps != tuple(spec.kernel)),
        ("split_k", split > 1), ("gpu_unpadded_gather", unpadded), ("cpu_named_matmul", named)) if fired)
    return GradWeightPlan("im2col", im2col_split=split, columns_first=columns_first, taps=taps,
                          gather_unpadded=unpadded, named_matmul=named)


def _grad_bias(spec: ConvBackwardSpec, options: LoweringOptions, tuning: Tuning, rules: list[str]) -> GradBiasPlan:
    batch_first = gw.bias_batch_first(spec, options)
    split = None if batch_first else gw.bias_split(spec, options, tuning)
    rules.extend(name for name, fired in (("bias_batch_first", batch_first), ("bias_split", split is not None))
                 if fired)
    return GradBiasPlan(batch_first=batch_first, split=split)
