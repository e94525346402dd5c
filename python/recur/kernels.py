"""A generated folder of kernels: its manifest, variant choice and devices.

recur.load(folder, calibration=None) gives the Kernels of a folder, one
per (folder, calibration) for the process. The ops name a Kernels by its
key (a string, so that torch.compile can carry it in a graph) and find it
again with lookup(key).
"""
import os
import threading
from collections import namedtuple

from . import _lib
from .calibration import Calibration
from .choice import RECOMPUTE, Chooser, recompute_variants
from .device import DeviceKernels
from .manifest import Manifest

DeviceInfo = namedtuple("DeviceInfo", "index name sm_count smem_per_sm", defaults=(None,))
DeviceInfo.__doc__ = ("A CUDA device as the variant choice sees it (from torch, no driver call of recur's); "
                      "smem_per_sm: the shared memory an SM holds, in bytes (None: unknown)")

_registry = {}
_registry_lock = threading.Lock()


def load(folder, calibration=None):
    """The Kernels of a generated folder (recur gen -o FOLDER), cached per
    (folder, calibration file)."""
    folder = os.path.realpath(os.fspath(folder))
    cal = os.path.realpath(os.fspath(calibration)) if calibration else ""
    key = folder + "\n" + cal
    k = _registry.get(key)
    if k is None:
        with _registry_lock:
            k = _registry.get(key)
            if k is None:
                k = _registry[key] = Kernels(folder, cal or None, key)
    return k


def lookup(key):
    k = _registry.get(key)
    if k is None:
        raise KeyError("no recur kernels loaded under key %r in this process: recur.load() the folder first" % key)
    return k


class Kernels:
    """Use recur.load(); attributes: folder, manifest, chooser, key."""

    def __init__(self, folder, calibration, key):
        self.folder = folder
        self.key = key
        self.manifest = Manifest(folder)
        self.calibration = Calibration(calibration) if calibration else None
        self.chooser = Chooser(self.manifest, self.calibration)
        self._by_capability = {}
        self._devices = {}
        self._lock = threading.RLock()   # on() holds it while the device's manifest_for() takes it
        self._param_cache = {}
        self._size_cache = {}
        self._decode_cache = {}

    def __reduce__(self):
        # copies and pickles of a module holding Kernels name the folder and
        # load it again (the same object within a process)
        return (load, (self.folder, self.calibration.path if self.calibration else None))

    def __repr__(self):
        return "recur.Kernels(%r, mixers=%s, %d variants)" % (self.folder, self.manifest.mixers(),
                                                              len(self.manifest.variants))

    # ---- no GPU needed ----

    def mixers(self):
        return self.manifest.mixers()

    def variants(self, mixer=None):
        if mixer is None:
            return list(self.manifest.variants)
        return self.manifest.variants_of(mixer)

    def decode_variant(self, mixer, pin=None):
        """The name of the mixer's decode step in this folder: pin where it
        is one, else the first (ValueError when it has none)."""
        return self.manifest.decode_variant(mixer, pin)

    def decode_for(self, mixer, B, T, D, pin=None):
        """The decode step that runs a call of B x T x D, checked against
        its shape rules once per shape (a sampling loop asks every token);
        ValueError with the reason where it refuses."""
        key = (mixer, B, T, D, pin)
        name = self._decode_cache.get(key)
        if name is None:
            s = _lib.shape(B, T, D)
            name = self.manifest.decode_variant(mixer, pin, s)
            why = self.manifest.check_shape(name, s)
            if why:
                raise ValueError("recur %s decode step %s refuses %dx%dx%d: %s" % (mixer, name, B, T, D, why))
            self._decode_cache[key] = name
        return name

    def check_variant(self, mixer, variant):
        """Raises ValueError unless variant is one of the mixer's in this folder,
        or "recompute" where the folder has variants of the mixer keeping no
        projection for the backward (choice.py)."""
        if variant == RECOMPUTE:
            recompute_variants(self.manifest, mixer)
            return
        if variant not in self.variants(mixer):
            raise ValueError("variant %r is not a %s variant of %s (it has: %s)"
                             % (variant, mixer, self.folder, ", ".join(self.variants(mixer))))

    def params(self, mixer, D):
        """The mixer's parameters at width D: [ParamSpec(name, dims, init, a, b)]."""
        key = (mixer, D)
        p = self._param_cache.get(key)
        if p is None:
            variants = self.manifest.all_of(mixer)
            s = _lib.shape(1, 1, D)
            refusals = [self.manifest.check_shape(v, s) for v in variants]
            if all(refusals):
                raise ValueError("width %d: no %s variant of %s accepts it: %s"
                                 % (D, mixer, self.folder, "; ".join(sorted(set(refusals)))))
            p = self._param_cache[key] = self.manifest.params(variants[0], s)
        return p

    def manifest_for(self, capability):
        """The manifest with the modules of a device of this compute
        capability selected (a folder of several targets lists each
        variant once per target)."""
        if capability is None:
            return self.manifest
        m = self._by_capability.get(capability)
        if m is None:
            with self._lock:
                m = self._by_capability.get(capability)
                if m is None:
                    m = self._by_capability[capability] = Manifest(self.folder, capability)
        return m

    def workspace_sizes(self, variant, B, L, D, capability=None):
        """(saved, scratch) bytes at B x L x D, from the manifest alone."""
        key = (variant, B, L, D, capability)
        z = self._size_cache.get(key)
        if z is None:
            z = self._size_cache[key] = self.manifest_for(capability).workspace_sizes(variant, _lib.shape(B, L, D))
        return z

    def choose(self, mixer, B, L, D, device=None, variant="", need=frozenset()):
        """(variant, why) for a shape; device: a DeviceInfo, or None; need:
        the sequence state fields the call gives ({"reset"})."""
        return self.chooser.choose(mixer, B, L, D, device, variant or "", frozenset(need))

    # ---- on a device ----

    def on(self, ordinal):
        """This folder's kernels on CUDA device ordinal (opens the runtime)."""
        d = self._devices.get(ordinal)
        if d is None:
            with self._lock:
                d = self._devices.get(ordinal)
                if d is None:
                    d = self._devices[ordinal] = DeviceKernels(self.manifest_for, ordinal)
        return d
