"""What the ops accept, checked before anything reaches C.

x: bf16 [B, L, D], contiguous, on a CUDA device; params: fp32 tensors on
the same device, in the manifest's order, with its dims at width D,
contiguous. The kernels read every tensor with 16-byte vector accesses,
so each must start on a 16-byte boundary: a fresh tensor always does, a
view into the middle of another may not. Every message names the tensor,
what it is and what was expected; a TypeError for a wrong type or dtype,
a ValueError for a wrong device, shape, layout or alignment.

The metadata checks also run on the fake tensors torch.compile traces
with; the alignment check needs real addresses and runs only in the real
implementation (aligned()).
"""
import torch

from ._lib import IO_ALIGN


def _where(t):
    return "%s tensor of shape %s on %s" % (str(t.dtype).replace("torch.", ""), list(t.shape), t.device)


def _no_gpu_hint():
    if not torch.cuda.is_available():
        return " (this process sees no CUDA device: torch.cuda.is_available() is False)"
    return ""


def x_shape(x, mixer):
    """(B, L, D) of x after checking x; raises TypeError / ValueError."""
    if not isinstance(x, torch.Tensor):
        raise TypeError("recur %s: x must be a torch.Tensor, got %s" % (mixer, type(x).__name__))
    if x.device.type != "cuda":
        raise ValueError("recur %s: x is a %s; the kernels run on a CUDA device: move it with x.cuda()%s"
                         % (mixer, _where(x), _no_gpu_hint()))
    if x.dtype != torch.bfloat16:
        raise TypeError("recur %s: x is a %s; the kernels take bfloat16 (x.bfloat16(), or run under "
                        "torch.autocast('cuda', dtype=torch.bfloat16), which casts a float32 x)" % (mixer, _where(x)))
    if x.dim() != 3:
        raise ValueError("recur %s: x is a %s; expected 3 dims [B, L, D]" % (mixer, _where(x)))
    if not x.is_contiguous():
        raise ValueError("recur %s: x (a %s, strides %s) is not contiguous: pass x.contiguous()"
                         % (mixer, _where(x), list(x.stride())))
    B, L, D = (int(n) for n in x.shape)
    if B < 1 or L < 1:
        raise ValueError("recur %s: x is a %s; B and L must be at least 1" % (mixer, _where(x)))
    return B, L, D


def params(ps, specs, x, mixer):
    """Checks the parameter tensors ps against the manifest's specs at x's width."""
    if len(ps) != len(specs):
        raise ValueError("recur %s takes %d parameters (%s), got %d" % (mixer, len(specs),
                                                                       ", ".join(s.name for s in specs), len(ps)))
    # every call of both passes runs this: each parameter's usual case in one
    # test, the message made only for one that fails it
    dev = x.device
    for t, spec in zip(ps, specs):
        if not (isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.device == dev and
                t.shape == spec.dims and t.is_contiguous()):
            _param_fault(t, spec, x, mixer)


def _param_fault(t, spec, x, mixer):
    """Raises what is wrong with parameter tensor t, the first of params' checks it fails."""
    what = "recur %s: parameter %s" % (mixer, spec.name)
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (what, type(t).__name__))
    if t.dtype != torch.float32:
        raise TypeError("%s is a %s; parameters are float32 (autocast leaves them so; a recur.Mixer "
                        "made bf16 or fp16 widens its own)" % (what, _where(t)))
    if t.device != x.device:
        raise ValueError("%s is a %s, x is on %s: move the module with .to(x.device)" % (what, _where(t), x.device))
    if tuple(int(n) for n in t.shape) != tuple(spec.dims):
        raise ValueError("%s is a %s; at width D = %d it has shape %s" % (what, _where(t), int(x.shape[2]),
                                                                           list(spec.dims)))
    if not t.is_contiguous():
        raise ValueError("%s (a %s) is not contiguous" % (what, _where(t)))
    raise ValueError("%s is a %s and fails the parameters' checks" % (what, _where(t)))


def resets(r, x, mixer):
    """Checks reset marks r against x: [B, L], bool or uint8 (1 where a
    document starts), contiguous, on x's device; returns them as uint8."""
    what = "recur %s: resets" % mixer
    if not isinstance(r, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (what, type(r).__name__))
    if r.dtype not in (torch.bool, torch.uint8):
        raise TypeError("%s is a %s; marks are bool or uint8 (1 where a document starts)" % (what, _where(r)))
    if r.device != x.device:
        raise ValueError("%s is a %s, x is on %s" % (what, _where(r), x.device))
    if tuple(r.shape) != tuple(x.shape[:2]):
        raise ValueError("%s is a %s; for x of shape %s it is [B, L] = %s" % (what, _where(r), list(x.shape),
                                                                           list(x.shape[:2])))
    if not r.is_contiguous():
        raise ValueError("%s (a %s) is not contiguous: pass resets.contiguous()" % (what, _where(r)))
    return r.view(torch.uint8) if r.dtype == torch.bool else r


def state(t, what, x, mixer, ndocs=None):
    """Checks a state tensor (initial state, a final state's gradient): fp32
    [B, D] on x's device, contiguous; [N, D] for N documents of cu_seqlens
    (ndocs) instead."""
    where = "recur %s: %s" % (mixer, what)
    rows, name = (x.shape[0], "B") if ndocs is None else (ndocs, "N (documents)")
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (where, type(t).__name__))
    if t.dtype != torch.float32:
        raise TypeError("%s is a %s; states are float32 [%s, D]" % (where, _where(t), name))
    if t.device != x.device:
        raise ValueError("%s is a %s, x is on %s" % (where, _where(t), x.device))
    if tuple(t.shape) != (rows, x.shape[2]):
        raise ValueError("%s is a %s; for x of shape %s it is [%s, D] = %s" % (where, _where(t), list(x.shape),
                                                                            name, [rows, x.shape[2]]))
    if not t.is_contiguous():
        raise ValueError("%s (a %s) is not contiguous" % (where, _where(t)))


def aligned(named, variant, shape):
    """Checks that each (name, tensor) starts on a 16-byte boundary."""
    for name, t in named:
        p = t.data_ptr()
        if p % IO_ALIGN:
            raise ValueError("recur %s at %s: %s starts at 0x%x, not on a %d-byte boundary (the kernels use "
                             "16-byte vector accesses); pass a fresh tensor, e.g. %s.clone()"
                             % (variant, shape, name, p, IO_ALIGN, name))


def pool(t, x, mixer):
    """Checks a decode step's states: fp32 [S, D] on x's device, contiguous; returns S."""
    where = "recur %s decode step: state" % mixer
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (where, type(t).__name__))
    if t.dtype != torch.float32:
        raise TypeError("%s is a %s; states are float32 [S, D]" % (where, _where(t)))
    if t.device != x.device:
        raise ValueError("%s is a %s, x is on %s" % (where, _where(t), x.device))
    if t.dim() != 2 or int(t.shape[1]) != int(x.shape[2]) or int(t.shape[0]) < 1:
        raise ValueError("%s is a %s; for x of shape %s it is [S, D] with D = %d (S slots, at least 1)"
                         % (where, _where(t), list(x.shape), int(x.shape[2])))
    if not t.is_contiguous():
        raise ValueError("%s (a %s) is not contiguous" % (where, _where(t)))
    return int(t.shape[0])


def index(i, x, mixer):
    """Checks a decode step's slot index: integers [B] on x's device;
    returns it as contiguous int32 (negative: a padding row)."""
    where = "recur %s decode step: index" % mixer
    if not isinstance(i, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (where, type(i).__name__))
    if i.dtype not in (torch.int32, torch.int64):
        raise TypeError("%s is a %s; slots are int32 or int64" % (where, _where(i)))
    if i.device != x.device:
        raise ValueError("%s is a %s, x is on %s" % (where, _where(i), x.device))
    if tuple(i.shape) != (int(x.shape[0]),):
        raise ValueError("%s is a %s; for x of shape %s it is [B] = [%d]" % (where, _where(i), list(x.shape),
                                                                           int(x.shape[0])))
    return i.to(torch.int32).contiguous()


def cu_seqlens(cu, x, mixer):
    """Checks document offsets (flash-attn's and fla's cu_seqlens: int [N +
    1], 0 first, L last, increasing) over x's one packed row, without
    reading them (no synchronisation): type, shape, device."""
    where = "recur %s: cu_seqlens" % mixer
    if not isinstance(cu, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (where, type(cu).__name__))
    if cu.dtype not in (torch.int32, torch.int64) or cu.dim() != 1 or cu.numel() < 2:
        raise TypeError("%s is a %s; offsets are int32 or int64 [N + 1]" % (where, _where(cu)))
    if cu.device != x.device:
        raise ValueError("%s is a %s, x is on %s" % (where, _where(cu), x.device))
    if x.dim() != 3 or x.shape[0] != 1:
        raise ValueError("%s packs documents into one row: x must be [1, L, D], got %s (for B rows of documents "
                         "pass resets= [B, L])" % (where, list(x.shape)))
    if cu.numel() - 1 > x.shape[1]:
        raise ValueError("%s gives %d documents in %d tokens; a document has at least one token"
                         % (where, cu.numel() - 1, x.shape[1]))
