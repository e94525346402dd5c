"""librecur.so through ctypes: finding it, the C API's types and signatures.

Every function of runtime/recur.h this package calls is declared once in
_SIGNATURES (argtypes, restype). The caller-provided workspace calls
(recur_workspace_sizes, recur_forward_ws, recur_backward_ws) and
recur_manifest_variant_scan are bound lazily: a library built before they
existed still loads, and only a call that needs one of them fails, naming
it.

Every C function returns 0 or -1 with a message in an error buffer; call()
turns -1 into a RecurError carrying that message.
"""
import ctypes
import os
import threading

ERRLEN = 2048
WS_ALIGN = 256        # RECUR_WS_ALIGN: where each workspace region must start
IO_ALIGN = 16         # tensors and parameters: the kernels' 16-byte vector accesses
MAXDIM = 8            # RECUR_MAXDIM
INT_MAX = 2 ** 31 - 1
MAX_ELEMS = 2 ** 40   # RECUR_MAX_ELEMS


class RecurError(RuntimeError):
    """An error reported by librecur (its message names the call, variant,
    kernel or shape at fault), or a missing library, driver or symbol."""


# ---- the C API's types ----

CUdeviceptr = ctypes.c_ulonglong
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_void_p = ctypes.c_void_p
c_double_p = ctypes.POINTER(ctypes.c_double)


class Shape(ctypes.Structure):
    _fields_ = [("B", c_int), ("L", c_int), ("D", c_int)]


class SeqState(ctypes.Structure):
    _fields_ = [("h0", CUdeviceptr), ("reset", CUdeviceptr), ("cu_seqlens", CUdeviceptr), ("ndocs", ctypes.c_int),
                ("hT", CUdeviceptr), ("dhT", CUdeviceptr), ("dh0", CUdeviceptr), ("map_loga", CUdeviceptr),
                ("map_h", CUdeviceptr), ("index", CUdeviceptr)]


class IO(ctypes.Structure):
    _fields_ = [("x", CUdeviceptr), ("y", CUdeviceptr), ("dy", CUdeviceptr), ("dx", CUdeviceptr),
                ("params", ctypes.POINTER(CUdeviceptr)), ("grads", ctypes.POINTER(CUdeviceptr)),
                ("state", ctypes.POINTER(SeqState))]


class WsSizes(ctypes.Structure):
    _fields_ = [("saved", c_size_t), ("scratch", c_size_t)]


class Ws(ctypes.Structure):
    _fields_ = [("saved", CUdeviceptr), ("scratch", CUdeviceptr),
                ("saved_bytes", c_size_t), ("scratch_bytes", c_size_t)]


class PlanInfo(ctypes.Structure):
    _fields_ = [("kernel", c_char_p), ("grid", ctypes.c_uint * 3), ("block", c_int),
                ("dyn_smem", ctypes.c_int64), ("cluster", c_int)]


P = ctypes.POINTER
M = c_void_p           # recur_manifest *
V = c_void_p           # recur_variant *
RT = c_void_p          # recur_rt *
ERR = (c_char_p, c_size_t)

_SIGNATURES = {
    "recur_abi_size": (c_size_t, [c_char_p]),
    "recur_tensor_bytes": (c_int, [Shape, c_size_t, P(c_size_t), *ERR]),
    "recur_rt_open": (c_int, [P(RT), c_int, *ERR]),
    "recur_rt_device_name": (c_int, [RT, c_char_p, c_size_t]),
    "recur_rt_compute_capability": (c_int, [RT, P(c_int), P(c_int), *ERR]),
    "recur_manifest_load": (c_int, [c_char_p, P(M), *ERR]),
    "recur_manifest_free": (None, [M]),
    "recur_manifest_nvariants": (c_int, [M]),
    "recur_manifest_variant_name": (c_char_p, [M, c_int]),
    "recur_manifest_variant_mixer": (c_char_p, [M, c_int]),
    "recur_manifest_variant_target": (c_char_p, [M, c_int]),
    "recur_manifest_variant_state": (c_char_p, [M, c_int]),
    "recur_manifest_variant_scan": (c_char_p, [M, c_int]),
    "recur_manifest_find": (c_int, [M, c_char_p]),
    "recur_manifest_select": (c_int, [M, c_int, c_int, *ERR]),
    "recur_manifest_info": (c_char_p, [M, c_char_p]),
    "recur_param_count": (c_int, [M, c_int]),
    "recur_param_name": (c_char_p, [M, c_int, c_int]),
    "recur_param_dims": (c_int, [M, c_int, c_int, Shape, P(ctypes.c_long)]),
    "recur_param_init": (c_char_p, [M, c_int, c_int, Shape, c_double_p, c_double_p]),
    "recur_check_shape": (c_int, [M, c_int, Shape, c_char_p, c_size_t]),
    "recur_launch_count": (c_int, [M, c_int, c_int]),
    "recur_launch_plan": (c_int, [M, c_int, c_int, c_int, Shape, P(PlanInfo), *ERR]),
    "recur_variant_load": (c_int, [RT, M, c_char_p, P(V), *ERR]),
    "recur_variant_module": (c_char_p, [V]),
    "recur_variant_workspace_bytes": (c_size_t, [V]),
    # caller-provided workspaces: bound on first use (see module doc)
    "recur_workspace_sizes": (c_int, [M, c_int, Shape, P(WsSizes), *ERR]),
    "recur_forward_ws": (c_int, [V, Shape, P(IO), P(Ws), c_void_p, *ERR]),
    "recur_backward_ws": (c_int, [V, Shape, P(IO), P(Ws), c_void_p, *ERR]),
}
_LAZY = {"recur_workspace_sizes", "recur_forward_ws", "recur_backward_ws", "recur_manifest_variant_scan"}


# ---- finding and loading the library ----

def _candidates():
    """(how it was found, path or name) in the order they are tried."""
    env = os.environ.get("RECUR_LIB")
    if env:
        return [("RECUR_LIB", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    repo_build = os.path.normpath(os.path.join(here, "..", "..", "build", "librecur.so"))
    return [("the repository's build folder", repo_build), ("the system loader", "librecur.so")]


class Library:
    """The loaded librecur.so with its functions declared."""

    def __init__(self, cdll, path):
        self.cdll = cdll
        self.path = path
        self._bound = {}
        self._lock = threading.Lock()
        for name in _SIGNATURES:
            if name not in _LAZY:
                self._bind(name)
        self._check_layouts()

    def _check_layouts(self):
        """The ctypes structs against the library's own sizes: a library built
        from another recur.h would read past them."""
        if not self.has("recur_abi_size"):
            return   # a library from before the check: the lazy bindings still name what is missing
        size = self.fn("recur_abi_size")
        for cname, struct in (("recur_shape", Shape), ("recur_io", IO), ("recur_seqstate", SeqState),
                              ("recur_ws", Ws), ("recur_ws_sizes", WsSizes), ("recur_plan_info", PlanInfo)):
            want = size(cname.encode())
            if want != ctypes.sizeof(struct):
                raise RecurError("%s was built from another runtime/recur.h: its %s has %d bytes, this package's "
                                 "%d; rebuild the library and the package from one tree"
                                 % (self.path, cname, want, ctypes.sizeof(struct)))

    def _bind(self, name):
        try:
            fn = getattr(self.cdll, name)
        except AttributeError:
            raise RecurError(
                "%s has no %s: this librecur predates the function; rebuild it "
                "(cmake --build BUILD --target recur_shared) from a tree whose runtime/recur.h "
                "implements it, or point RECUR_LIB at one that does" % (self.path, name)) from None
        restype, argtypes = _SIGNATURES[name]
        fn.restype = restype
        fn.argtypes = argtypes
        self._bound[name] = fn
        return fn

    def fn(self, name):
        """The C function name, declared; RecurError if the library lacks it."""
        f = self._bound.get(name)
        if f is None:
            with self._lock:
                f = self._bound.get(name) or self._bind(name)
        return f

    def has(self, name):
        return hasattr(self.cdll, name)

    def __getattr__(self, name):
        if name.startswith("recur_"):
            return self.fn(name)
        raise AttributeError(name)


_library = None
_library_lock = threading.Lock()


def library():
    """The process's librecur, loaded on first use: $RECUR_LIB, else the
    repository's build/librecur.so, else the system loader's librecur.so."""
    global _library
    if _library is not None:
        return _library
    with _library_lock:
        if _library is None:
            _library = _load()
    return _library


def _load():
    tried = []
    for how, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (how, path))
            continue
        try:
            return Library(ctypes.CDLL(path), path)
        except OSError as e:
            tried.append("%s (%s): %s" % (how, path, e))
    raise RecurError(
        "librecur.so not found; tried " + "; ".join(tried) +
        ". Build it with `cmake -S . -B build && cmake --build build --target recur_shared` in the "
        "recur source tree, or set RECUR_LIB to the path of librecur.so")


# ---- calling ----

def errbuf():
    return ctypes.create_string_buffer(ERRLEN)


def text(b):
    """A C string (bytes or None) as str."""
    return b.decode("utf-8", "replace") if b else ""


def check(rc, err, context=""):
    """Raises RecurError with the C message (after context) when rc != 0."""
    if rc != 0:
        msg = text(err.value) or "failed with no message"
        raise RecurError(context + ": " + msg if context else msg)


def shape(B, L, D):
    """A recur_shape; the C side checks its limits, Python first keeps each
    within int so that ctypes cannot wrap it."""
    for name, v in (("B", B), ("L", L), ("D", D)):
        if not 1 <= v <= INT_MAX:
            raise ValueError("shape %dx%dx%d: %s = %d is outside 1..%d" % (B, L, D, name, v, INT_MAX))
    if B * L * D > MAX_ELEMS:
        raise ValueError("shape %dx%dx%d: %d elements, over recur's limit of 2^40" % (B, L, D, B * L * D))
    return Shape(B, L, D)
