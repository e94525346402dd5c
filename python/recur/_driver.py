"""The device's primary context, current in the calling thread.

librecur launches through the CUDA Driver API, which needs a current
context in the thread that calls it. torch makes the primary context
current lazily, per thread, on its own first runtime call there; autograd
runs the backward in a worker thread of its own where that need not have
happened yet (torch.cuda.set_device is skipped when the device number
already matches). So before every call into librecur the primary context
of the tensor's device is made current here, as Triton's launcher does:
a cuCtxGetCurrent when it already is (the common case), a
cuDevicePrimaryCtxRetain + cuCtxSetCurrent once per thread otherwise.

libcuda is opened as librecur opens it ($RECUR_LIBCUDA, else libcuda.so.1),
so both use the same driver.
"""
import ctypes
import os
import threading

from ._lib import RecurError

_cuda = None
_primary = {}          # device ordinal -> CUcontext (retained once, for the process)
_lock = threading.Lock()


def _libcuda():
    global _cuda
    if _cuda is None:
        path = os.environ.get("RECUR_LIBCUDA") or "libcuda.so.1"
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise RecurError("cannot open the CUDA driver %s (%s): install the NVIDIA driver, or set "
                             "RECUR_LIBCUDA to libcuda.so.1's path" % (path, e)) from None
        for name, args in (("cuCtxGetCurrent", [ctypes.POINTER(ctypes.c_void_p)]),
                           ("cuCtxSetCurrent", [ctypes.c_void_p]),
                           ("cuDeviceGet", [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
                           ("cuDevicePrimaryCtxRetain", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int])):
            f = getattr(lib, name)
            f.argtypes = args
            f.restype = ctypes.c_int
        _cuda = lib
    return _cuda


def _check(rc, what):
    if rc != 0:
        raise RecurError("CUDA driver error %d %s" % (rc, what))


def _primary_context(ordinal):
    ctx = _primary.get(ordinal)
    if ctx is not None:
        return ctx
    with _lock:
        if ordinal not in _primary:
            cu = _libcuda()
            dev = ctypes.c_int()
            c = ctypes.c_void_p()
            _check(cu.cuDeviceGet(ctypes.byref(dev), ordinal), "opening device %d" % ordinal)
            _check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(c), dev), "retaining device %d's primary context"
                   % ordinal)
            _primary[ordinal] = c.value
    return _primary[ordinal]


_UNCHANGED = object()


def make_current(ordinal):
    """Makes device ordinal's primary context current in this thread;
    returns what restore() needs to put the thread's context back."""
    want = _primary_context(ordinal)
    cu = _cuda
    cur = ctypes.c_void_p()
    _check(cu.cuCtxGetCurrent(ctypes.byref(cur)), "reading the current context")
    if cur.value == want:
        return _UNCHANGED
    _check(cu.cuCtxSetCurrent(want), "making device %d's primary context current" % ordinal)
    return cur.value


def restore(previous):
    """Puts back the context make_current() found: a thread's current context
    is also torch's current device, which a call must leave as it was."""
    if previous is not _UNCHANGED:
        _check(_cuda.cuCtxSetCurrent(previous), "restoring the thread's context")


class current:
    """with current(ordinal): ... -- device ordinal's primary context is
    current inside, the thread's own again after."""

    def __init__(self, ordinal):
        self.ordinal = ordinal

    def __enter__(self):
        self.previous = make_current(self.ordinal)

    def __exit__(self, *exc):
        restore(self.previous)


class preserved:
    """with preserved(): ... -- the thread's current context is put back
    after (recur_rt_open makes its device's context current). Without a
    driver there is nothing to preserve, and the call inside reports that."""

    def __enter__(self):
        self.previous = _UNCHANGED
        try:
            cu = _libcuda()
        except RecurError:
            return
        cur = ctypes.c_void_p()
        if cu.cuCtxGetCurrent(ctypes.byref(cur)) == 0:
            self.previous = cur.value

    def __exit__(self, *exc):
        restore(self.previous)
