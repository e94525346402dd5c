"""The runtime on one CUDA device and the variants loaded there.

One recur_rt per device ordinal for the process, opened on first use
(runtime()). A DeviceKernels holds, for one generated folder on one
device, the manifest with that device's modules selected and the loaded
variant handles, each with a lock: a handle is not thread-safe, and two
threads (two streams) may call the same variant at once.

Handles, runtimes and the manifests they point into live as long as the
process: freeing them at interpreter exit would race the driver's own
teardown, and the memory they hold is host memory (every device byte of
a call belongs to torch's allocator).

The current context of the calling thread (torch's current device) is
librecur's business: each of its calls makes the device's primary
context current for itself and puts the thread's own back before it
returns (runtime/recur.h), so any thread may call, autograd's backward
worker included, and nothing here touches the driver.
"""
import ctypes
import threading

from . import _lib
from ._lib import RecurError

_runtimes = {}
_runtimes_lock = threading.Lock()


class Runtime:
    """recur_rt of one device: name and compute capability."""

    def __init__(self, ordinal):
        lib = _lib.library()
        self.ordinal = ordinal
        self.handle = ctypes.c_void_p()
        err = _lib.errbuf()
        rc = lib.recur_rt_open(ctypes.byref(self.handle), ordinal, err, _lib.ERRLEN)
        if rc != 0:   # no driver: librecur's message names libcuda and what it tried
            raise RecurError("cannot open CUDA device %d: %s" % (ordinal, _lib.text(err.value)))
        name = ctypes.create_string_buffer(256)
        lib.recur_rt_device_name(self.handle, name, 256)
        self.name = _lib.text(name.value)
        major, minor = ctypes.c_int(), ctypes.c_int()
        _lib.check(lib.recur_rt_compute_capability(self.handle, ctypes.byref(major), ctypes.byref(minor), err,
                                                   _lib.ERRLEN), err, "compute capability of device %d" % ordinal)
        self.capability = (major.value, minor.value)


def runtime(ordinal):
    """The process's runtime on device ordinal, opened on first use."""
    rt = _runtimes.get(ordinal)
    if rt is None:
        with _runtimes_lock:
            rt = _runtimes.get(ordinal)
            if rt is None:
                rt = _runtimes[ordinal] = Runtime(ordinal)
    return rt


class LoadedVariant:
    """A recur_variant handle and the lock that serialises calls on it."""

    def __init__(self, rt, manifest, name):
        lib = _lib.library()
        self.name = name
        self.ordinal = rt.ordinal
        self.handle = ctypes.c_void_p()
        self.lock = threading.Lock()
        err = _lib.errbuf()
        rc = lib.recur_variant_load(rt.handle, manifest.handle, name.encode(), ctypes.byref(self.handle), err,
                                    _lib.ERRLEN)
        _lib.check(rc, err, "loading variant %s on device %d" % (name, rt.ordinal))
        self.module = _lib.text(lib.recur_variant_module(self.handle))
        self._fwd = lib.fn("recur_forward_ws")
        self._bwd = lib.fn("recur_backward_ws")

    def own_workspace_bytes(self):
        """Bytes the variant holds in workspaces of its own: 0 while every
        call brings its workspaces from torch."""
        return _lib.library().recur_variant_workspace_bytes(self.handle)

    def forward(self, s, io, ws, stream):
        self._call(self._fwd, "forward", s, io, ws, stream)

    def backward(self, s, io, ws, stream):
        self._call(self._bwd, "backward", s, io, ws, stream)

    def _call(self, fn, what, s, io, ws, stream):
        err = _lib.errbuf()
        with self.lock:
            rc = fn(self.handle, s, ctypes.byref(io), ctypes.byref(ws), ctypes.c_void_p(stream), err, _lib.ERRLEN)
        _lib.check(rc, err, "recur %s of %s at %dx%dx%d on cuda:%d" % (what, self.name, s.B, s.L, s.D, self.ordinal))


class DeviceKernels:
    """One folder's kernels on one device."""

    def __init__(self, manifest_for, ordinal):
        self.rt = runtime(ordinal)
        self.manifest = manifest_for(self.rt.capability)
        self.manifest.pin()
        self._variants = {}
        self._lock = threading.Lock()

    def variant(self, name):
        v = self._variants.get(name)
        if v is None:
            with self._lock:
                v = self._variants.get(name)
                if v is None:
                    v = self._variants[name] = LoadedVariant(self.rt, self.manifest, name)
        return v


def pointers(tensors):
    """A C array of the tensors' device addresses (recur_io's params, grads)."""
    return (_lib.CUdeviceptr * len(tensors))(*[t.data_ptr() for t in tensors])
