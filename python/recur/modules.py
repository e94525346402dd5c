"""nn.Modules holding a mixer's parameters.

recur.Mixer(kernels, mixer, width) creates the mixer's parameters with the
names, dims and order of the manifest (RG-LRU: Wa, ba, Wx, bx, lam; SAMU:
wu, wv, lam, bu, bv, theta, omega), initialised as the mixer's script
declares (recur_param_init):
  zeros        0
  const a      a
  normal a     a * N(0, 1)
  decay a, b   log(u^(-1/2) - 1), u uniform in [a, b]  (RecurrentGemma's
               lambda, for which softplus(lam) = -log(u) / 2)
so a state_dict of the same names loads as it is (RG-LRU's Wa, Wx are
[H][K][K] = [head][in][out], RecurrentGemma's layout). Parameters are
float32 (a module made bf16 or fp16 has them widened for each call, as
transformers' adapter in recurrentgemma.py does); the module's forward
takes bf16 x (or float32 under bf16 autocast) and returns bf16 y.
"""
import math

import torch
from torch import nn

from . import ops
from .checkpoints import rglru_from_recurrentgemma, rglru_specs
from .kernels import load


def init_(t, spec, generator=None):
    """Fills parameter tensor t as spec (a manifest.ParamSpec) declares."""
    with torch.no_grad():
        if spec.init == "zeros":
            return t.zero_()
        if spec.init == "const":
            return t.fill_(spec.a)
        if spec.init == "normal":
            return t.normal_(0.0, spec.a, generator=generator)
        if spec.init == "decay":
            u = torch.empty(t.shape, dtype=torch.float64, device=t.device)
            u.uniform_(spec.a, spec.b, generator=generator)
            return t.copy_(torch.log(torch.exp(-0.5 * torch.log(u)) - 1.0))
    raise ValueError("parameter %s: unknown initialisation %r (known: zeros, const, normal, decay)"
                     % (spec.name, spec.init))


class Mixer(nn.Module):
    """A recurrent mixer layer: y = mixer(x), x and y [B, L, width].

    kernels: a recur.load()ed folder or its path; calibration: a calibration
    file for the variant choice (with a path for kernels); variant: a
    variant to pin (None: calibration, else the default rule), or
    "recompute": that choice among the variants whose forward keeps no
    projection for the backward (4 bytes an element fewer saved a layer)."""

    def __init__(self, kernels, mixer, width, variant=None, calibration=None, device=None, generator=None):
        super().__init__()
        if not hasattr(kernels, "key"):
            kernels = load(kernels, calibration)
        elif calibration is not None:
            raise ValueError("calibration goes to recur.load(folder, calibration), not beside a loaded Kernels")
        self.kernels = kernels
        self.mixer = mixer
        self.width = int(width)
        self.variant = variant
        self.specs = kernels.params(mixer, self.width)
        if variant:
            kernels.check_variant(mixer, variant)   # an unknown name fails here, not at the first call
        for spec in self.specs:
            self.register_parameter(spec.name, nn.Parameter(torch.empty(spec.dims, dtype=torch.float32, device=device)))
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None):
        for spec in self.specs:
            init_(getattr(self, spec.name), spec, generator)

    def forward(self, x, resets=None, initial_state=None, output_final_state=False, cu_seqlens=None):
        """y for x [B, L, width], or (y, final_state) with output_final_state;
        resets: [B, L] bool, True where a document starts; initial_state:
        fp32 [B, width]; cu_seqlens: int [N + 1] document offsets in x's one
        row (see recur.mix)."""
        return ops.mix(x, self._params(), self.kernels, self.mixer, self.variant,
                       resets=resets, initial_state=initial_state, output_final_state=output_final_state,
                       cu_seqlens=cu_seqlens)

    def _params(self):
        """The parameters in the manifest's order as the kernels take them,
        float32: a module made bf16 or fp16 (.bfloat16(), .half()) has them
        widened for the call, exactly, and their gradients come back in its
        dtype through autograd; float64 ones stay refused (the kernels would
        not compute in float64)."""
        out = []
        for s in self.specs:
            p = getattr(self, s.name)
            out.append(p.float() if p.dtype in (torch.bfloat16, torch.float16) else p)
        return out

    def new_state(self, slots, device=None):
        """Zeroed decode states, fp32 [slots, width], on the parameters' device unless given."""
        dev = device if device is not None else next(self.parameters()).device
        return torch.zeros(slots, self.width, dtype=torch.float32, device=dev)

    def step(self, x, state, index=None, start=False, kernels=None, variant=None):
        """The decode step: y for the next tokens x [B, T, width], advancing
        state (fp32 [S, width], new_state()) in place (see recur.decode_step).
        kernels: the folder holding the mixer's decode step, when it is not
        the module's own; variant: which of its decode steps."""
        k = self.kernels if kernels is None else (kernels if hasattr(kernels, "key") else load(kernels))
        return ops.decode_step(x, self._params(), state, k, self.mixer, index=index, start=start, variant=variant)

    def extra_repr(self):
        return "%s, width=%d, variant=%s, kernels=%s" % (self.mixer, self.width, self.variant or "auto",
                                                          self.kernels.folder)


class RGLRU(Mixer):
    """The RG-LRU mixer (Griffin / RecurrentGemma) of a generated folder."""

    def __init__(self, kernels, width, **kw):
        super().__init__(kernels, "rglru", width, **kw)

    @classmethod
    def from_recurrentgemma(cls, kernels, state_dict, prefix="", **kw):
        """The layer with one released RecurrentGemma RG-LRU's weights
        (recur.checkpoints: transformers' or recurrentgemma's names under
        prefix); its width and heads are the checkpoint's, and the folder's
        RG-LRU must have heads as wide (2B and 9B: 256, lua/variants/
        recurrentgemma.lua). Other keywords as RGLRU's."""
        params = rglru_from_recurrentgemma(state_dict, prefix)
        H, K = params["Wa"].shape[0], params["Wa"].shape[1]
        if not hasattr(kernels, "key"):
            kernels = load(kernels, kw.pop("calibration", None))
        rglru_specs(kernels, H, K)
        layer = cls(kernels, H * K, **kw)
        layer.load_state_dict(params)
        return layer


class SAMU(Mixer):
    """The SAMU mixer of a generated folder."""

    def __init__(self, kernels, width, **kw):
        super().__init__(kernels, "samu", width, **kw)


def parameter_count(kernels, mixer, width):
    """Elements of the mixer's parameters at width (no module built)."""
    if not hasattr(kernels, "key"):
        kernels = load(kernels)
    return sum(math.prod(s.dims) for s in kernels.params(mixer, width))
