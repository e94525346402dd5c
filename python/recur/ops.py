"""The mixer as torch operators: forward, backward, and autograd between them.

Two operators, on torch >= 2.4 registered with torch.library.custom_op
(fake implementations for torch.compile, autograd through
register_autograd); on older torch the same two functions behind a
torch.autograd.Function:

  recur::mixer_forward(x, params, kernels, mixer, variant) -> (y, saved)
  recur::mixer_backward(dy, x, params, saved, kernels, mixer, variant) -> [dx, *grads]

`saved` is the forward's saved workspace, a uint8 tensor from torch's
caching allocator that autograd keeps for the backward; each call's
scratch workspace is allocated inside the operator and given back to the
allocator when it returns (its kernels are ordered on the same stream,
so the allocator's stream semantics make the reuse safe). Nothing is
cached in a variant between calls, so any number of forwards may run
before their backwards. Every call runs on torch.cuda.current_stream().

`kernels` is the key of a recur.load()ed folder, `variant` a pinned
variant or "" for the choice of choice.py; both strings, so that a
compiled graph carries them. The variant is chosen again, from the same
cache, by every call of both operators, so a backward runs the variant
of its forward.
"""
import ctypes
import os
from typing import List, Optional, Tuple

import torch

from . import _lib, checks
from .device import pointers
from .kernels import DeviceInfo, load, lookup

HAS_CUSTOM_OP = hasattr(torch, "library") and hasattr(torch.library, "custom_op") and hasattr(
    torch.library, "register_fake")
_NEW_AUTOCAST_API = hasattr(torch, "get_autocast_dtype")

_device_infos = {}
_capabilities = {}

# RECUR_POISON=1 (tests): every output is NaN and every workspace byte 0xff
# before the kernels run, so an element they fail to write, or a workspace
# they read before writing, shows.
_POISON = os.environ.get("RECUR_POISON") == "1"


def _poison(outputs, workspaces):
    if _POISON:
        for t in outputs:
            t.fill_(float("nan"))
        for t in workspaces:
            t.fill_(255)


def device_info(index):
    """DeviceInfo of CUDA device index, from torch (cached)."""
    d = _device_infos.get(index)
    if d is None:
        p = torch.cuda.get_device_properties(index)
        d = _device_infos[index] = DeviceInfo(index, p.name, p.multi_processor_count)
    return d


def _capability(index):
    c = _capabilities.get(index)
    if c is None:
        c = _capabilities[index] = tuple(torch.cuda.get_device_capability(index))
    return c


def _resolve(x, params, key, mixer, variant, resets=None):
    """Checks x, params and the reset marks; (kernels, variant name,
    (B, L, D), DeviceInfo, marks as uint8 or None). A call with marks runs a
    variant that takes them."""
    k = lookup(key)
    B, L, D = checks.x_shape(x, mixer)
    checks.params(params, k.params(mixer, D), x, mixer)
    marks = checks.resets(resets, x, mixer) if resets is not None else None
    dev = device_info(x.device.index)
    name, _ = k.choose(mixer, B, L, D, dev, variant, frozenset(("reset",)) if marks is not None else frozenset())
    return k, name, (B, L, D), dev, marks


def _state(marks):
    """recur_seqstate of a call (None: the plain call); kept alive by the caller."""
    return None if marks is None else _lib.SeqState(reset=marks.data_ptr())


def _shape_text(s):
    return "%dx%dx%d" % s


def _scratch(n, device):
    return torch.empty(n, dtype=torch.uint8, device=device)


def _ws(saved, scratch):
    for what, t in (("saved", saved), ("scratch", scratch)):
        if t.numel() and t.data_ptr() % _lib.WS_ALIGN:
            raise _lib.RecurError("the %s workspace torch allocated starts at 0x%x, not on a %d-byte boundary"
                                  % (what, t.data_ptr(), _lib.WS_ALIGN))
    return _lib.Ws(saved.data_ptr(), scratch.data_ptr(), saved.numel(), scratch.numel())


def _ptr_array(tensors):
    arr = pointers(tensors)
    return arr, ctypes.cast(arr, ctypes.POINTER(_lib.CUdeviceptr))


# ---- the two implementations ----

def forward_impl(x, params, key, mixer, variant, resets=None):
    k, name, s, dev, marks = _resolve(x, params, key, mixer, variant, resets)
    checks.aligned([("x", x)] + [(p.name, t) for p, t in zip(k.params(mixer, s[2]), params)], name, _shape_text(s))
    dk = k.on(dev.index)
    n_saved, n_scratch = k.workspace_sizes(name, *s, capability=dk.rt.capability)
    y = torch.empty_like(x)
    saved = torch.empty(n_saved, dtype=torch.uint8, device=x.device)
    scratch = _scratch(n_scratch, x.device)
    _poison([y], [saved, scratch])
    keep, parr = _ptr_array(params)
    st = _state(marks)
    io = _lib.IO(x=x.data_ptr(), y=y.data_ptr(), dy=0, dx=0, params=parr, grads=None,
                 state=ctypes.pointer(st) if st is not None else None)
    dk.variant(name).forward(_lib.shape(*s), io, _ws(saved, scratch), torch.cuda.current_stream(x.device).cuda_stream)
    return y, saved


def backward_impl(dy, x, params, saved, key, mixer, variant, resets=None):
    k, name, s, dev, marks = _resolve(x, params, key, mixer, variant, resets)
    where = "recur %s backward at %s" % (name, _shape_text(s))
    if dy.shape != x.shape or dy.device != x.device:
        raise ValueError("%s: dy is a %s tensor of shape %s on %s, x of shape %s on %s"
                         % (where, dy.dtype, list(dy.shape), dy.device, list(x.shape), x.device))
    if dy.dtype != torch.bfloat16 or not dy.is_contiguous() or dy.data_ptr() % _lib.IO_ALIGN:
        dy = dy.to(torch.bfloat16).contiguous(memory_format=torch.contiguous_format)
        if dy.data_ptr() % _lib.IO_ALIGN:
            dy = dy.clone()
    dk = k.on(dev.index)
    n_saved, n_scratch = k.workspace_sizes(name, *s, capability=dk.rt.capability)
    if saved.dtype != torch.uint8 or saved.numel() != n_saved or saved.device != x.device:
        raise ValueError("%s: saved is a %s tensor of %d elements on %s; the forward of this variant and shape "
                         "saves %d bytes on %s" % (where, saved.dtype, saved.numel(), saved.device, n_saved, x.device))
    dx = torch.empty_like(x)
    grads = [torch.empty_like(p) for p in params]
    scratch = _scratch(n_scratch, x.device)
    _poison([dx] + grads, [scratch])
    keep_p, parr = _ptr_array(params)
    keep_g, garr = _ptr_array(grads)
    st = _state(marks)
    io = _lib.IO(x=x.data_ptr(), y=0, dy=dy.data_ptr(), dx=dx.data_ptr(), params=parr, grads=garr,
                 state=ctypes.pointer(st) if st is not None else None)
    dk.variant(name).backward(_lib.shape(*s), io, _ws(saved, scratch),
                              torch.cuda.current_stream(x.device).cuda_stream)
    return [dx] + grads


def forward_fake(x, params, key, mixer, variant, resets=None):
    k, name, s, dev, _ = _resolve(x, params, key, mixer, variant, resets)
    n_saved, _ = k.workspace_sizes(name, *s, capability=_capability(dev.index))
    return torch.empty_like(x), x.new_empty((n_saved,), dtype=torch.uint8)


def backward_fake(dy, x, params, saved, key, mixer, variant, resets=None):
    _resolve(x, params, key, mixer, variant, resets)
    return [torch.empty_like(x)] + [torch.empty_like(p) for p in params]


# ---- registration ----

if HAS_CUSTOM_OP:
    @torch.library.custom_op("recur::mixer_forward", mutates_args=())
    def _forward_op(x: torch.Tensor, params: List[torch.Tensor], kernels: str, mixer: str,
                    variant: str, resets: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        return forward_impl(x, params, kernels, mixer, variant, resets)

    @torch.library.custom_op("recur::mixer_backward", mutates_args=())
    def _backward_op(dy: torch.Tensor, x: torch.Tensor, params: List[torch.Tensor], saved: torch.Tensor,
                     kernels: str, mixer: str, variant: str, resets: Optional[torch.Tensor]) -> List[torch.Tensor]:
        return backward_impl(dy, x, params, saved, kernels, mixer, variant, resets)

    _forward_op.register_fake(forward_fake)
    _backward_op.register_fake(backward_fake)

    def _setup_context(ctx, inputs, output):
        x, params, kernels, mixer, variant, resets = inputs
        _, saved = output
        ctx.has_resets = resets is not None
        ctx.save_for_backward(x, saved, *params, *([resets] if resets is not None else []))
        ctx.call = (kernels, mixer, variant)

    def _autograd_backward(ctx, dy, dsaved):
        x, saved, *params = ctx.saved_tensors
        resets = params.pop() if ctx.has_resets else None
        g = _backward_op(dy, x, params, saved, *ctx.call, resets)
        return g[0], list(g[1:]), None, None, None, None

    _forward_op.register_autograd(_autograd_backward, setup_context=_setup_context)

    def _differentiable(x, params, kernels, mixer, variant, resets):
        y, _ = _forward_op(x, params, kernels, mixer, variant, resets)
        return y

    def raw_forward(x, params, kernels, mixer, variant, resets):
        with torch.no_grad():    # the caller does its own backward
            return _forward_op(x, params, kernels, mixer, variant, resets)

    def raw_backward(dy, x, params, saved, kernels, mixer, variant, resets):
        with torch.no_grad():
            return _backward_op(dy, x, params, saved, kernels, mixer, variant, resets)
else:
    class _MixerFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, kernels, mixer, variant, resets, *params):
            y, saved = forward_impl(x, list(params), kernels, mixer, variant, resets)
            ctx.has_resets = resets is not None
            ctx.save_for_backward(x, saved, *params, *([resets] if resets is not None else []))
            ctx.call = (kernels, mixer, variant)
            return y

        @staticmethod
        def backward(ctx, dy):
            x, saved, *params = ctx.saved_tensors
            resets = params.pop() if ctx.has_resets else None
            g = backward_impl(dy, x, params, saved, *ctx.call, resets)
            return (g[0], None, None, None, None) + tuple(g[1:])

    def _differentiable(x, params, kernels, mixer, variant, resets):
        return _MixerFunction.apply(x, kernels, mixer, variant, resets, *params)

    def raw_forward(x, params, kernels, mixer, variant, resets):
        with torch.no_grad():
            return forward_impl(x, list(params), kernels, mixer, variant, resets)

    def raw_backward(dy, x, params, saved, kernels, mixer, variant, resets):
        with torch.no_grad():
            return backward_impl(dy, x, list(params), saved, kernels, mixer, variant, resets)


# ---- the public functions ----

def _autocast_bf16():
    if _NEW_AUTOCAST_API:
        return torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") == torch.bfloat16
    return torch.is_autocast_enabled() and torch.get_autocast_gpu_dtype() == torch.bfloat16


def _kernels_key(kernels):
    return kernels.key if hasattr(kernels, "key") else load(kernels).key


def _no_more(kwargs, what):
    # Initial and final states and cu_seqlens become keyword arguments here
    # (None by default) as the kernels take them.
    if kwargs:
        raise TypeError("%s: no keyword %s: of the sequence state the kernels take resets= only, so far"
                        % (what, ", ".join(sorted(kwargs))))


def mix(x, params, kernels, mixer, variant=None, resets=None, **later):
    """y = mixer(x) with autograd: x bf16 [B, L, D] on a CUDA device (a
    float32 x is cast to bf16 under torch.autocast(dtype=torch.bfloat16)),
    params the mixer's fp32 tensors in the manifest's order, kernels a
    recur.load()ed folder or its path, variant a name to pin or None.
    resets: bool or uint8 [B, L], True where a document starts (packed
    documents; the state restarts there as at t = 0), run by a variant that
    takes reset marks (a grid with resets = { true })."""
    _no_more(later, "recur.mix")
    if isinstance(x, torch.Tensor) and x.dtype == torch.float32 and _autocast_bf16():
        x = x.to(torch.bfloat16)
    return _differentiable(x, list(params), _kernels_key(kernels), mixer, variant or "", resets)


def forward(x, params, kernels, mixer, variant=None, resets=None):
    """(y, saved) without autograd: saved goes to backward() unchanged, with the same resets."""
    return raw_forward(x, list(params), _kernels_key(kernels), mixer, variant or "", resets)


def backward(dy, x, params, saved, kernels, mixer, variant=None, resets=None):
    """(dx, [parameter gradients]) of the forward that gave saved."""
    g = raw_backward(dy, x, list(params), saved, _kernels_key(kernels), mixer, variant or "", resets)
    return g[0], list(g[1:])
