"""A generated folder's manifest.json, read through librecur (no GPU).

librecur answers everything a shape decides: which variants accept it,
each parameter's dims and initialisation, the workspace sizes, the launch
plan. The variant attributes the default choice ranks by (scan, prefix,
chunk, fused, materialized, recompute, which launches are "resident") are read from
the same manifest.json as JSON, whose format runtime/manifest.h documents.
"""
import ctypes
import json
import os
from collections import namedtuple

from . import _lib
from ._lib import RecurError

ParamSpec = namedtuple("ParamSpec", "name dims init a b")
ParamSpec.__doc__ = "A mixer parameter at one width: name, dims, init kind and its numbers a, b."

Variant = namedtuple("Variant", "name mixer target scan prefix chunk fused shared_sfu fused_output "
                                "fused_write materialized resident_launches state mma rows recompute")
Variant.__doc__ = ("A variant's attributes from manifest.json; resident_launches: (backward, index) of "
                   "each launch whose blocks wait on each other (they must all be resident at once); state: "
                   "the fields of the sequence state its kernels take (frozenset, e.g. {'reset'}); mma: a decode "
                   "step on tensor cores (R.decode { mma = true }); rows: a decode step of one kernel a row "
                   "(R.decode { rows = true }); recompute: the backward makes the projections apart again "
                   "(R.variants { recompute = { true } }), so the forward keeps none of them.")


class Manifest:
    """One loaded manifest. select(major, minor) gives a copy that keeps,
    per variant, the module for a device of that compute capability."""

    def __init__(self, folder, capability=None):
        lib = _lib.library()
        self.folder = folder
        self.path = os.path.join(folder, "manifest.json")
        if not os.path.isfile(self.path):
            raise RecurError(
                "no manifest at %s: generate the kernels first, e.g. `recur gen lua/variants/all.lua -o %s`"
                % (self.path, folder))
        self._m = ctypes.c_void_p()
        err = _lib.errbuf()
        _lib.check(lib.recur_manifest_load(os.fsencode(folder), ctypes.byref(self._m), err, _lib.ERRLEN), err,
                   "loading %s" % self.path)
        self._lib = lib
        self.capability = capability
        if capability is not None:
            _lib.check(lib.recur_manifest_select(self._m, capability[0], capability[1], err, _lib.ERRLEN), err,
                       "choosing the modules of %s for a device of compute capability %d.%d"
                       % (self.path, capability[0], capability[1]))
        n = lib.recur_manifest_nvariants(self._m)
        self.names = [_lib.text(lib.recur_manifest_variant_name(self._m, i)) for i in range(n)]
        self._index = {}
        for i, name in enumerate(self.names):
            self._index.setdefault(name, i)
        self.variants = self._read_attributes()
        self.generator = _lib.text(lib.recur_manifest_info(self._m, b"generator"))

    @property
    def handle(self):
        return self._m

    def __del__(self):
        # a manifest whose variants were loaded on a device is kept for the
        # process (the variants point into it): see device.py
        if getattr(self, "_m", None) and not getattr(self, "_pinned", False):
            self._lib.recur_manifest_free(self._m)
            self._m = None

    def pin(self):
        """Keeps the C manifest for the life of the process."""
        self._pinned = True

    # ---- variants ----

    def index(self, variant):
        i = self._index.get(variant)
        if i is None:
            raise ValueError("variant %r is not in %s (it has: %s)" % (variant, self.path, ", ".join(
                sorted(set(self.names)))))
        return i

    def mixers(self):
        """Mixer names in manifest order."""
        out = []
        for v in self.variants.values():
            if v.mixer not in out:
                out.append(v.mixer)
        return out

    def all_of(self, mixer):
        """Every variant of the mixer, its decode step included."""
        names = [v.name for v in self.variants.values() if v.mixer == mixer]
        if not names:
            raise ValueError("mixer %r has no variant in %s (mixers: %s)" % (mixer, self.path,
                                                                             ", ".join(self.mixers())))
        return names

    def variants_of(self, mixer):
        """The mixer's variants that run a forward and a backward over whole
        sequences (its decode step is decode_variant's)."""
        names = [n for n in self.all_of(mixer) if self.variants[n].scan != "decode"]
        if not names:
            raise ValueError("%s holds only the decode step of mixer %r: generate its scans too, e.g. "
                             "`recur gen lua/variants/all.lua -o FOLDER`" % (self.path, mixer))
        return names

    def decode_variant(self, mixer, pin=None, shape=None):
        """The mixer's decode step (R.decode): pin where given (it must be
        one), else the first on tensor cores (mma = true: as fast or faster
        than the fp32 step at every batch measured, and its weights rounded
        as the scans' are), else -- for calls of one token -- the first of
        one kernel a row (rows = true: 1.5-2.4x faster than the two-launch
        step there; at 16 tokens and B = 1 2.2x slower, so calls of more
        tokens keep the folder's order), else the first the folder lists;
        with shape (a _lib.Shape), the first of those whose rules take it
        (rows = true holds widths to 8192). ValueError saying how to make
        one where it has none."""
        names = [n for n in self.all_of(mixer) if self.variants[n].scan == "decode"]
        if not names:
            raise ValueError("%s holds no decode step of mixer %r: generate one, e.g. "
                             "`recur gen lua/variants/decode.lua -o FOLDER` (R.decode { mixer = ... })"
                             % (self.path, mixer))
        if pin and pin not in names:
            raise ValueError("%r is not a decode step of mixer %r in %s (it has: %s)"
                             % (pin, mixer, self.path, ", ".join(names)))
        if pin:
            return pin
        one_token = shape is not None and shape.L == 1
        v = self.variants   # sorted is stable: the folder's order within each rank
        order = sorted(names, key=lambda n: 0 if v[n].mma else 1 if v[n].rows and one_token else 2)
        if shape is not None:
            for n in order:
                if self.check_shape(n, shape) is None:
                    return n
        return order[0]

    def _read_attributes(self):
        with open(self.path, "rb") as f:
            doc = json.load(f)
        out = {}
        for v in doc.get("variants", []):
            name = v.get("name")
            if name not in self._index or name in out:
                continue
            resident = [(bw, i) for bw, key in ((0, "forward"), (1, "backward"))
                        for i, launch in enumerate(v.get(key, [])) if launch.get("resident")]
            out[name] = Variant(name=name, mixer=v.get("mixer"), target=v.get("target") or "",
                                scan=v.get("scan") or "hierarchical", prefix=int(v.get("prefix", 0)),
                                chunk=int(v.get("chunk", 0)), fused=bool(v.get("fused")),
                                shared_sfu=bool(v.get("shared_sfu")), fused_output=bool(v.get("fused_output")),
                                fused_write=bool(v.get("fused_write")), materialized=bool(v.get("materialized")),
                                resident_launches=tuple(resident), state=frozenset(v.get("state") or ()),
                                mma=bool(v.get("mma")), rows=bool(v.get("rows")),
                                recompute=bool(v.get("recompute")))
        return out

    # ---- shapes ----

    def check_shape(self, variant, s):
        """None when variant runs shape s (a _lib.Shape), else the reason."""
        why = _lib.errbuf()
        if self._lib.recur_check_shape(self._m, self.index(variant), s, why, _lib.ERRLEN) == 0:
            return None
        return _lib.text(why.value) or "refused"

    def params(self, variant, s):
        """The parameters of variant's mixer at shape s, in the C API's order."""
        lib, i = self._lib, self.index(variant)
        out = []
        for p in range(lib.recur_param_count(self._m, i)):
            name = _lib.text(lib.recur_param_name(self._m, i, p))
            dims = (ctypes.c_long * _lib.MAXDIM)()
            nd = lib.recur_param_dims(self._m, i, p, s, dims)
            if nd < 0:
                raise RecurError("variant %s: no dims for parameter %s at %dx%dx%d" % (variant, name, s.B, s.L, s.D))
            a, b = ctypes.c_double(), ctypes.c_double()
            kind = lib.recur_param_init(self._m, i, p, s, ctypes.byref(a), ctypes.byref(b))
            out.append(ParamSpec(name, tuple(dims[k] for k in range(nd)), _lib.text(kind) or None, a.value, b.value))
        return out

    def workspace_sizes(self, variant, s):
        """(saved, scratch) bytes of variant at shape s."""
        z = _lib.WsSizes()
        err = _lib.errbuf()
        fn = self._lib.fn("recur_workspace_sizes")
        _lib.check(fn(self._m, self.index(variant), s, ctypes.byref(z), err, _lib.ERRLEN), err,
                   "workspace sizes of %s at %dx%dx%d" % (variant, s.B, s.L, s.D))
        return z.saved, z.scratch

    def resident_need(self, variant, s):
        """(blocks, dynamic shared bytes a block) of the launch of variant at
        s that needs the most blocks resident at once, counted as the runtime
        checks it (a resident launch whose grid x exceeds 1); (0, 0) when none
        waits across its blocks."""
        most, smem = 0, 0
        info = _lib.PlanInfo()
        err = _lib.errbuf()
        for backward, i in self.variants[variant].resident_launches:
            if self._lib.recur_launch_plan(self._m, self.index(variant), backward, i, s, ctypes.byref(info),
                                           err, _lib.ERRLEN) != 0:
                continue   # refused shapes are reported by check_shape
            n = info.grid[0] * info.grid[1] * info.grid[2]
            if info.grid[0] > 1 and n > most:
                most, smem = n, int(info.dyn_smem)
        return most, smem
