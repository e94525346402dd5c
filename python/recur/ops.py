"""The mixer as torch operators: forward, backward, and autograd between them.

Two operators: run eagerly, a torch.autograd.Function calls them
straight (the least host time a call); traced by torch.compile (torch >=
2.4), the same two functions registered with torch.library.custom_op
(fake implementations for the trace, autograd through register_autograd):

  recur::mixer_forward(x, params, kernels, mixer, variant, resets, h0, want_hT, cu) -> (y, saved, hT)
  recur::mixer_backward(dy, dhT, x, params, saved, kernels, mixer, variant, resets, h0, want_hT, cu)
      -> [dx, *grads, dh0]

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


# the shared memory an SM holds, KB, by compute capability (the CUDA C++
# Programming Guide's table), where torch's properties do not say
_SMEM_PER_SM_KB = {(8, 0): 164, (8, 6): 100, (8, 7): 164, (8, 9): 100, (9, 0): 228}


def _smem_per_sm(p):
    v = getattr(p, "shared_memory_per_multiprocessor", None)
    if v:
        return int(v)
    kb = _SMEM_PER_SM_KB.get((getattr(p, "major", 0), getattr(p, "minor", 0)))
    return kb * 1024 if kb else None


def device_info(index):
    """DeviceInfo of CUDA device index, from torch (cached)."""
    d = _device_infos.get(index)
    if d is None:
        p = torch.cuda.get_device_properties(index)
        d = _device_infos[index] = DeviceInfo(index, p.name, p.multi_processor_count, _smem_per_sm(p))
    return d


def _capability(index):
    c = _capabilities.get(index)
    if c is None:
        c = _capabilities[index] = tuple(torch.cuda.get_device_capability(index))
    return c


def _ndocs(cu):
    """Documents of cu_seqlens (int32 [N + 1]), or None without them"""
    return None if cu is None else cu.numel() - 1


def _resolve(x, params, key, mixer, variant, resets=None, h0=None, want_hT=False, cu=None, want_map=False):
    """Checks x, params and the sequence state; (kernels, variant name,
    (B, L, D), DeviceInfo, marks as uint8 or None). A call with marks runs a
    variant that takes them, one with h0 or asking for hT a variant that
    takes states, one with cu (documents with a state each, checks.cu_seqlens)
    a variant that takes cu_seqlens, one asking for the row's map a variant
    that takes it."""
    k = lookup(key)
    B, L, D = checks.x_shape(x, mixer)
    checks.params(params, k.params(mixer, D), x, mixer)
    marks = checks.resets(resets, x, mixer) if resets is not None else None
    if h0 is not None:
        checks.state(h0, "initial_state", x, mixer, _ndocs(cu))
    need = frozenset((["reset"] if marks is not None else []) + (["h0"] if h0 is not None or want_hT else []) +
                     (["cu_seqlens"] if cu is not None else []) + (["map_loga", "map_h"] if want_map else []))
    dev = device_info(x.device.index)
    name, _ = k.choose(mixer, B, L, D, dev, variant, need)
    return k, name, (B, L, D), dev, marks


def _state(marks=None, h0=None, hT=None, dhT=None, dh0=None, cu=None, map_loga=None, map_h=None):
    """recur_seqstate of a call (None: the plain call); kept alive by the caller."""
    ts = {"reset": marks, "h0": h0, "hT": hT, "dhT": dhT, "dh0": dh0, "cu_seqlens": cu, "map_loga": map_loga,
          "map_h": map_h}
    if all(t is None for t in ts.values()):
        return None
    st = _lib.SeqState(**{f: t.data_ptr() for f, t in ts.items() if t is not None})
    if cu is not None:
        st.ndocs = _ndocs(cu)
    return st


def _io(st, **fields):
    return _lib.IO(state=ctypes.pointer(st) if st is not None else None, **fields)


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

def _no_state(x):
    return x.new_empty((0,), dtype=torch.float32)


def _nstates(s, cu):
    """rows of a state: B, or the documents of cu_seqlens"""
    return s[0] if cu is None else _ndocs(cu)


def _forward(x, params, key, mixer, variant, resets, h0, want_hT, cu, want_map=False):
    """(y, saved, hT, maps): the forward's launch for forward_impl and
    row_map; maps (map_loga, map_h) [B, D] fp32 when want_map, else None."""
    k, name, s, dev, marks = _resolve(x, params, key, mixer, variant, resets, h0, want_hT, cu, want_map)
    checks.aligned([("x", x)] + [(p.name, t) for p, t in zip(k.params(mixer, s[2]), params)], name, _shape_text(s))
    dk = k.on(dev.index)
    n_saved, n_scratch = k.workspace_sizes(name, *s, capability=dk.rt.capability)
    y = torch.empty_like(x)
    hT = x.new_empty((_nstates(s, cu), s[2]), dtype=torch.float32) if want_hT else _no_state(x)
    maps = tuple(x.new_empty((s[0], s[2]), dtype=torch.float32) for _ in range(2)) if want_map else None
    saved = torch.empty(n_saved, dtype=torch.uint8, device=x.device)
    scratch = _scratch(n_scratch, x.device)
    _poison([y, hT] + list(maps or ()), [saved, scratch])
    keep, parr = _ptr_array(params)
    st = _state(marks, h0, hT if want_hT else None, cu=cu, map_loga=maps and maps[0], map_h=maps and maps[1])
    io = _io(st, x=x.data_ptr(), y=y.data_ptr(), dy=0, dx=0, params=parr, grads=None)
    dk.variant(name).forward(_lib.shape(*s), io, _ws(saved, scratch), torch.cuda.current_stream(x.device).cuda_stream)
    return y, saved, hT, maps


def forward_impl(x, params, key, mixer, variant, resets=None, h0=None, want_hT=False, cu=None):
    """(y, saved, hT): hT [B, D] fp32 ([N, D] with cu) when want_hT, else an empty tensor."""
    y, saved, hT, _ = _forward(x, params, key, mixer, variant, resets, h0, want_hT, cu)
    return y, saved, hT


def backward_impl(dy, dhT, x, params, saved, key, mixer, variant, resets=None, h0=None, want_hT=False, cu=None):
    """[dx, *parameter gradients, dh0]: dh0 [B, D] fp32 ([N, D] with cu) where h0 was given, else an empty tensor."""
    k, name, s, dev, marks = _resolve(x, params, key, mixer, variant, resets, h0, want_hT, cu)
    where = "recur %s backward at %s" % (name, _shape_text(s))
    if dy.shape != x.shape or dy.device != x.device:
        raise ValueError("%s: dy is a %s tensor of shape %s on %s, x of shape %s on %s"
                         % (where, dy.dtype, list(dy.shape), dy.device, list(x.shape), x.device))
    if dy.dtype != torch.bfloat16 or not dy.is_contiguous() or dy.data_ptr() % _lib.IO_ALIGN:
        dy = dy.to(torch.bfloat16).contiguous(memory_format=torch.contiguous_format)
        if dy.data_ptr() % _lib.IO_ALIGN:
            dy = dy.clone()
    if dhT is not None:
        dhT = dhT.to(torch.float32).contiguous()
        checks.state(dhT, "the gradient of the final state", x, mixer, _ndocs(cu))
    dk = k.on(dev.index)
    n_saved, n_scratch = k.workspace_sizes(name, *s, capability=dk.rt.capability)
    if saved.dtype != torch.uint8 or saved.numel() != n_saved or saved.device != x.device:
        raise ValueError("%s: saved is a %s tensor of %d elements on %s; the forward of this variant and shape "
                         "saves %d bytes on %s" % (where, saved.dtype, saved.numel(), saved.device, n_saved, x.device))
    dx = torch.empty_like(x)
    grads = [torch.empty_like(p) for p in params]
    dh0 = torch.empty_like(h0) if h0 is not None else _no_state(x)
    scratch = _scratch(n_scratch, x.device)
    _poison([dx, dh0] + grads, [scratch])
    keep_p, parr = _ptr_array(params)
    keep_g, garr = _ptr_array(grads)
    st = _state(marks, h0, None, dhT, dh0 if h0 is not None else None, cu)
    io = _io(st, x=x.data_ptr(), y=0, dy=dy.data_ptr(), dx=dx.data_ptr(), params=parr, grads=garr)
    dk.variant(name).backward(_lib.shape(*s), io, _ws(saved, scratch),
                              torch.cuda.current_stream(x.device).cuda_stream)
    return [dx] + grads + [dh0]


def forward_fake(x, params, key, mixer, variant, resets=None, h0=None, want_hT=False, cu=None):
    k, name, s, dev, _ = _resolve(x, params, key, mixer, variant, resets, h0, want_hT, cu)
    n_saved, _ = k.workspace_sizes(name, *s, capability=_capability(dev.index))
    hT = x.new_empty((_nstates(s, cu), s[2]), dtype=torch.float32) if want_hT else _no_state(x)
    return torch.empty_like(x), x.new_empty((n_saved,), dtype=torch.uint8), hT


def backward_fake(dy, dhT, x, params, saved, key, mixer, variant, resets=None, h0=None, want_hT=False, cu=None):
    _resolve(x, params, key, mixer, variant, resets, h0, want_hT, cu)
    dh0 = torch.empty_like(h0) if h0 is not None else _no_state(x)
    return [torch.empty_like(x)] + [torch.empty_like(p) for p in params] + [dh0]


# ---- registration ----
#
# What a backward needs of its forward besides x, params and saved: the
# reset marks, h0 and the document offsets (they decide where the chain is
# cut) and whether hT was asked for (the variant choice). Optional tensors
# are saved only when given.

def _pack(ctx, x, saved, params, resets, h0, cu):
    ctx.has = (resets is not None, h0 is not None, cu is not None)
    ctx.save_for_backward(x, saved, *params, *[t for t in (resets, h0, cu) if t is not None])
    # an output the loss does not use gets None, not a tensor of zeros: autograd
    # would otherwise fill one the size of each (the saved workspace, 4 bytes an
    # element at heads of 256, and an unused final state) every backward
    ctx.set_materialize_grads(False)


def _dy(dy, x):
    """dy of a backward: zeros where the loss uses only the final state"""
    return torch.zeros_like(x) if dy is None else dy


def _unpack(ctx):
    x, saved, *rest = ctx.saved_tensors
    cu = rest.pop() if ctx.has[2] else None
    h0 = rest.pop() if ctx.has[1] else None
    resets = rest.pop() if ctx.has[0] else None
    return x, saved, rest, resets, h0, cu


class _MixerFunction(torch.autograd.Function):
    """The eager path: autograd straight to forward_impl / backward_impl.
    The custom ops below carry the same two calls through torch.compile;
    run eagerly their dispatch (schema checks, pytree flattening, the
    aliasing check) costs hundreds of microseconds of host time a call
    (bench/experiments/2026-12-07-torch-layer-overhead/), more than a
    layer's kernels take at short L."""

    @staticmethod
    def forward(ctx, x, kernels, mixer, variant, resets, h0, want_hT, cu, *params):
        y, saved, hT = forward_impl(x, list(params), kernels, mixer, variant, resets, h0, want_hT, cu)
        _pack(ctx, x, saved, params, resets, h0, cu)
        ctx.call = (kernels, mixer, variant)
        ctx.want_hT = want_hT
        if not want_hT:
            ctx.mark_non_differentiable(hT)
        return y, hT

    @staticmethod
    def backward(ctx, dy, dhT):
        x, saved, params, resets, h0, cu = _unpack(ctx)
        with torch.no_grad():
            g = backward_impl(_dy(dy, x), dhT if ctx.want_hT else None, x, params, saved, *ctx.call, resets, h0,
                              ctx.want_hT, cu)
        if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in [dy, dhT, x, h0] + params):
            # create_graph=True: a gradient of these must fail, not be taken as 0
            g = _FirstOrderOnly.apply(len(g), *g, *[t for t in [dy, dhT, x, h0] + params if t is not None])
        return (g[0], None, None, None, None, g[-1] if h0 is not None else None, None, None) + tuple(g[1:-1])


class _FirstOrderOnly(torch.autograd.Function):
    """Aliases of the mixer's gradients whose own backward raises: the
    kernels have no second derivative, and a gradient computed with
    create_graph=True (a gradient penalty) would otherwise take recur's
    gradients as constants and silently leave their part out.
    (torch.autograd.function.once_differentiable looks only at the
    incoming gradients, not at x and the parameters the backward reads.)"""

    @staticmethod
    def forward(ctx, n, *ts):
        """aliases of ts[:n]; the rest are what the gradients depend on
        (dy, x, the parameters), so that a second derivative reaches here"""
        return tuple(t.view_as(t) for t in ts[:n])

    @staticmethod
    def backward(ctx, *ggs):
        raise RuntimeError("recur: the mixer's gradients have no derivative of their own; a second derivative "
                           "through a recur layer (create_graph=True, e.g. a gradient penalty) is not supported")


def _untraceable():
    """Refuses torch.jit.trace where the custom ops are not there to record:
    the Function's kernels run outside what a trace records, so the traced
    module would return tensors no kernel wrote."""
    if torch.jit.is_tracing():
        raise RuntimeError("recur: torch.jit.trace cannot record recur's kernels on torch %s (it lacks "
                           "torch.library.custom_op, torch >= 2.4); run the module eagerly or under torch.compile"
                           % torch.__version__)


def _eager_differentiable(x, params, kernels, mixer, variant, resets, h0, want_hT, cu=None):
    _untraceable()
    return _MixerFunction.apply(x, kernels, mixer, variant, resets, h0, want_hT, cu, *params)


def _eager_raw_forward(x, params, kernels, mixer, variant, resets, h0, want_hT, cu=None):
    _untraceable()
    with torch.no_grad():    # the caller does its own backward
        return forward_impl(x, list(params), kernels, mixer, variant, resets, h0, want_hT, cu)


def _eager_raw_backward(dy, dhT, x, params, saved, kernels, mixer, variant, resets, h0, want_hT, cu=None):
    _untraceable()
    with torch.no_grad():
        return backward_impl(dy, dhT, x, list(params), saved, kernels, mixer, variant, resets, h0, want_hT, cu)


if HAS_CUSTOM_OP:
    @torch.library.custom_op("recur::mixer_forward", mutates_args=())
    def _forward_op(x: torch.Tensor, params: List[torch.Tensor], kernels: str, mixer: str, variant: str,
                    resets: Optional[torch.Tensor], h0: Optional[torch.Tensor],
                    want_hT: bool, cu: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return forward_impl(x, params, kernels, mixer, variant, resets, h0, want_hT, cu)

    @torch.library.custom_op("recur::mixer_backward", mutates_args=())
    def _backward_op(dy: torch.Tensor, dhT: Optional[torch.Tensor], x: torch.Tensor, params: List[torch.Tensor],
                     saved: torch.Tensor, kernels: str, mixer: str, variant: str, resets: Optional[torch.Tensor],
                     h0: Optional[torch.Tensor], want_hT: bool, cu: Optional[torch.Tensor]) -> List[torch.Tensor]:
        return backward_impl(dy, dhT, x, params, saved, kernels, mixer, variant, resets, h0, want_hT, cu)

    _forward_op.register_fake(forward_fake)
    _backward_op.register_fake(backward_fake)

    def _setup_context(ctx, inputs, output):
        x, params, kernels, mixer, variant, resets, h0, want_hT, cu = inputs
        _pack(ctx, x, output[1], params, resets, h0, cu)
        ctx.call = (kernels, mixer, variant)
        ctx.want_hT = want_hT

    def _autograd_backward(ctx, dy, dsaved, dhT):
        x, saved, params, resets, h0, cu = _unpack(ctx)
        dhT = dhT if ctx.want_hT else None
        g = _backward_op(_dy(dy, x), dhT, x, params, saved, *ctx.call, resets, h0, ctx.want_hT, cu)
        return g[0], list(g[1:-1]), None, None, None, None, g[-1] if h0 is not None else None, None, None

    _forward_op.register_autograd(_autograd_backward, setup_context=_setup_context)

    def _compiling():
        """traced (torch.compile, torch.export, torch.jit.trace): the custom ops, which a trace records"""
        return torch.compiler.is_compiling() or torch.jit.is_tracing()

    def _differentiable(x, params, kernels, mixer, variant, resets, h0, want_hT, cu=None):
        if not _compiling():
            return _eager_differentiable(x, params, kernels, mixer, variant, resets, h0, want_hT, cu)
        y, _, hT = _forward_op(x, params, kernels, mixer, variant, resets, h0, want_hT, cu)
        return y, hT

    def raw_forward(x, params, kernels, mixer, variant, resets, h0, want_hT, cu=None):
        if not _compiling():
            return _eager_raw_forward(x, params, kernels, mixer, variant, resets, h0, want_hT, cu)
        with torch.no_grad():
            return _forward_op(x, params, kernels, mixer, variant, resets, h0, want_hT, cu)

    def raw_backward(dy, dhT, x, params, saved, kernels, mixer, variant, resets, h0, want_hT, cu=None):
        if not _compiling():
            return _eager_raw_backward(dy, dhT, x, params, saved, kernels, mixer, variant, resets, h0, want_hT, cu)
        with torch.no_grad():
            return _backward_op(dy, dhT, x, params, saved, kernels, mixer, variant, resets, h0, want_hT, cu)
else:
    _differentiable, raw_forward, raw_backward = _eager_differentiable, _eager_raw_forward, _eager_raw_backward


# ---- the decode step ----
#
# A forward of the mixer's decode variant (R.decode): x [B, T, D] advances
# the states of a pool [S, D] in place. No autograd: sampling does not
# train. On torch >= 2.4 a custom_op that says it mutates the states, so
# torch.compile and CUDA graphs order it right.

def decode_impl(x, params, state, index, key, mixer, start, variant=""):
    k = lookup(key)
    B, T, D = checks.x_shape(x, mixer)
    checks.params(params, k.params(mixer, D), x, mixer)
    S = checks.pool(state, x, mixer)
    idx = checks.index(index, x, mixer) if index is not None else None
    if idx is None and S < B:
        raise ValueError("recur %s decode step: %d rows but %d states: without index row b uses slot b, so the "
                         "state has at least B rows" % (mixer, B, S))
    name = k.decode_for(mixer, B, T, D, variant or None)
    checks.aligned([("x", x), ("state", state)] + [(p.name, t) for p, t in zip(k.params(mixer, D), params)], name,
                   _shape_text((B, T, D)))
    dev = device_info(x.device.index)
    dk = k.on(dev.index)
    n_saved, n_scratch = k.workspace_sizes(name, B, T, D, capability=dk.rt.capability)
    # a padding row's y is not written: zeros rather than what the allocator held
    y = torch.zeros_like(x) if idx is not None else torch.empty_like(x)
    saved, scratch = _scratch(n_saved, x.device), _scratch(n_scratch, x.device)
    _poison([] if idx is not None else [y], [saved, scratch])
    keep, parr = _ptr_array(params)
    st = _lib.SeqState(h0=0 if start else state.data_ptr(), hT=state.data_ptr(),
                       index=idx.data_ptr() if idx is not None else 0)
    io = _io(st, x=x.data_ptr(), y=y.data_ptr(), dy=0, dx=0, params=parr, grads=None)
    dk.variant(name).forward(_lib.shape(B, T, D), io, _ws(saved, scratch),
                             torch.cuda.current_stream(x.device).cuda_stream)
    return y


if HAS_CUSTOM_OP:
    @torch.library.custom_op("recur::decode_step", mutates_args=("state",))
    def _decode_op(x: torch.Tensor, params: List[torch.Tensor], state: torch.Tensor, index: Optional[torch.Tensor],
                   kernels: str, mixer: str, start: bool, variant: str) -> torch.Tensor:
        return decode_impl(x, params, state, index, kernels, mixer, start, variant)

    @_decode_op.register_fake
    def _decode_fake(x, params, state, index, kernels, mixer, start, variant):
        return torch.empty_like(x)
else:
    def _decode_op(x, params, state, index, kernels, mixer, start, variant):
        return decode_impl(x, params, state, index, kernels, mixer, start, variant)


def decode_step(x, params, state, kernels, mixer, index=None, start=False, variant=None):
    """y for the next tokens x (bf16 [B, T, D], T = 1 for one token per
    row), advancing fp32 states [S, D] in place: row b continues from
    state[index[b]] (index None: state[b]) and leaves its state after its
    T tokens there; index: int32/int64 [B], a negative slot marks a padding
    row, whose state is neither read nor written (its y is 0). start=True: the
    states are not read, each row starts anew (a reset at its first
    token). Runs the folder's decode step (recur gen of R.decode { mixer =
    ... }, e.g. lua/variants/decode.lua): variant, where the folder has
    several (rglru_decode, rglru_decode_mma), else the one on tensor cores
    where there is one, else the first; no autograd."""
    if isinstance(x, torch.Tensor) and x.dtype == torch.float32 and _autocast_bf16():
        x = x.to(torch.bfloat16)
    with torch.no_grad():
        return _decode_op(x, list(params), state, index, _kernels_key(kernels), mixer, bool(start), variant or "")


# ---- the public functions ----

def _autocast_bf16():
    if _NEW_AUTOCAST_API:
        return torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") == torch.bfloat16
    return torch.is_autocast_enabled() and torch.get_autocast_gpu_dtype() == torch.bfloat16


def _kernels_key(kernels):
    return kernels.key if hasattr(kernels, "key") else load(kernels).key


def _no_more(kwargs, what):
    if kwargs:
        raise TypeError("%s: no keyword %s: of the sequence state the kernels take resets=, cu_seqlens=, "
                        "initial_state= and output_final_state= (the decode step is decode_step())"
                        % (what, ", ".join(sorted(kwargs))))


def cu_seqlens_marks(cu_seqlens, x, mixer):
    """Reset marks [1, L] for documents given as offsets (flash-attn's and
    fla's cu_seqlens: int [N + 1], 0 first, L last, increasing) over x's
    one packed row; made on the device, no synchronisation, so the offsets
    are not checked beyond their type, shape and device (checks.cu_seqlens)."""
    checks.cu_seqlens(cu_seqlens, x, mixer)
    marks = torch.zeros(1, x.shape[1], dtype=torch.uint8, device=x.device)
    # every document start but the first (t = 0 starts the row anyway);
    # an offset of L (the last) is dropped by the clamp and the mask
    starts = cu_seqlens[1:].long()
    inside = starts < x.shape[1]
    marks[0].index_fill_(0, torch.where(inside, starts, torch.zeros_like(starts)), 1)
    marks[0, 0] = 0
    return marks


def _documents(cu_seqlens, resets, states, x, mixer):
    """(resets, cu) of a call given cu_seqlens: without states the offsets
    become reset marks (any variant taking marks runs them); with states
    they go to a variant that takes cu_seqlens as int32, a state each"""
    if cu_seqlens is None:
        return resets, None
    if resets is not None:
        raise ValueError("recur %s: both resets= and cu_seqlens= given: documents are one or the other" % mixer)
    if states:
        checks.cu_seqlens(cu_seqlens, x, mixer)
        return None, cu_seqlens.to(torch.int32).contiguous()
    return cu_seqlens_marks(cu_seqlens, x, mixer), None


def mix(x, params, kernels, mixer, variant=None, resets=None, initial_state=None, output_final_state=False,
        cu_seqlens=None, **later):
    """y = mixer(x) with autograd: x bf16 [B, L, D] on a CUDA device (a
    float32 x is cast to bf16 under torch.autocast(dtype=torch.bfloat16)),
    params the mixer's fp32 tensors in the manifest's order, kernels a
    recur.load()ed folder or its path, variant a name to pin or None.
    resets: bool or uint8 [B, L], True where a document starts (packed
    documents; the state restarts there as at t = 0), run by a variant that
    takes reset marks (a grid with resets = { true }).
    initial_state: fp32 [B, D], the state each row continues from (t = 0 is
    then no reset; it gets a gradient); output_final_state: also return h at
    each row's last token, fp32 [B, D], differentiable: (y, final_state).
    Either runs a variant that takes states (a grid with states = { true }).
    cu_seqlens: int [N + 1] offsets of N documents packed into x's one row
    (x [1, L, D]): without states, the same as resets= with a mark at each
    offset; with initial_state / output_final_state, a state per document
    ([N, D]), run by a variant that takes cu_seqlens (a grid with docs =
    { true })."""
    _no_more(later, "recur.mix")
    resets, cu = _documents(cu_seqlens, resets, initial_state is not None or output_final_state, x, mixer)
    if isinstance(x, torch.Tensor) and x.dtype == torch.float32 and _autocast_bf16():
        x = x.to(torch.bfloat16)
    y, hT = _differentiable(x, list(params), _kernels_key(kernels), mixer, variant or "", resets, initial_state,
                            bool(output_final_state), cu)
    return (y, hT) if output_final_state else y


def forward(x, params, kernels, mixer, variant=None, resets=None, initial_state=None, output_final_state=False,
            cu_seqlens=None):
    """(y, saved), or (y, saved, final_state), without autograd: saved goes to
    backward() unchanged, with the same resets, initial_state and cu_seqlens."""
    resets, cu = _documents(cu_seqlens, resets, initial_state is not None or output_final_state, x, mixer)
    y, saved, hT = raw_forward(x, list(params), _kernels_key(kernels), mixer, variant or "", resets, initial_state,
                               bool(output_final_state), cu)
    return (y, saved, hT) if output_final_state else (y, saved)


def row_map(x, params, kernels, mixer, initial_state, variant=None, resets=None):
    """The row's map of x for a sequence split across devices
    (util/seqstate.h): (y, final_state, map_loga, map_h), the last three fp32
    [B, D], with final_state = exp(map_loga) * initial_state + map_h;
    map_loga is the sum of log a over the row, -inf in a row a reset mark
    cuts. initial_state fp32 [B, D]: the state each row continues from
    (zeros for a part that starts from nothing: its map is then the whole
    of what it sends on). Forward only, without gradients; run by a variant
    that takes the map (a grid with map = { true }: lua/variants/state.lua).
    x, params, kernels, mixer, variant and resets as for mix()."""
    if initial_state is None:
        raise ValueError("recur.row_map: the map is of a row continuing a state: give initial_state (zeros "
                         "where the row has none)")
    if isinstance(x, torch.Tensor) and x.dtype == torch.float32 and _autocast_bf16():
        x = x.to(torch.bfloat16)
    with torch.no_grad():
        y, _, hT, (mla, mh) = _forward(x, list(params), _kernels_key(kernels), mixer, variant or "", resets,
                                       initial_state, True, None, want_map=True)
    return y, hT, mla, mh


def backward(dy, x, params, saved, kernels, mixer, variant=None, resets=None, initial_state=None,
             final_state_grad=None, output_final_state=False, cu_seqlens=None):
    """(dx, [parameter gradients]), and dh0 as a third where initial_state
    was given, of the forward that gave saved (output_final_state as it
    was); final_state_grad: the gradient of its final state, or None."""
    want = bool(output_final_state) or final_state_grad is not None
    resets, cu = _documents(cu_seqlens, resets, initial_state is not None or want, x, mixer)
    g = raw_backward(dy, final_state_grad, x, list(params), saved, _kernels_key(kernels), mixer, variant or "",
                     resets, initial_state, want, cu)
    return (g[0], list(g[1:-1])) + ((g[-1],) if initial_state is not None else ())
