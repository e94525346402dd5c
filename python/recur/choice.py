"""Which variant runs a shape.

In order:
1. a pinned variant (Mixer(..., variant=NAME), or variant= of the op): it
   must accept the shape, else ValueError with the variant's own reason;
   variant="recompute" pins no name but keeps the choice below to the
   variants whose forward keeps no projection for the backward (the lean
   ones, R.variants' recompute), and fails where the folder has none;
2. the winner of a calibration file, when one was given (calibration.py):
   the best matching entry whose winner the folder holds and accepts the shape;
3. the default rule below.
Only variants whose kernels take the sequence state a call gives (need:
e.g. {"reset"} for reset marks) are candidates, and of those the leanest
(a call without a state runs a variant taking none where the folder has
one, as RecurrentGemma's grid, which holds both); a pinned one without it
is refused.

The default rule ranks the variants of the mixer that accept the shape:
  - not materialized before materialized (no [B, L, D] gate tensors);
  - the projections kept for the backward before made again there
    (recompute: leaner between the passes, one kernel more in the backward;
    pin it, or calibrate with --saved-budget, to run it);
  - one-pass, then look-back, then hierarchical scans;
  - smaller prefix, then fused, shared_sfu, fused_output, fused_write first;
  - smaller chunk; the name last, so the choice is deterministic.
It is the order of the H200 calibration (bench/results/calibration_h200.json):
fused prefix-32 one-pass chunk-8 won for both mixers at every measured
shape, 1x8192x1024 to 1x131072x1024, look-back next. Look-back and one-pass
kernels wait across their blocks, so the runtime refuses a grid the device
cannot hold at once; a variant whose waiting grid the device cannot hold
goes after every other: at most two blocks an SM (the H200 runs 256 on its
132), and where the device's shared memory an SM is known, as many as it
holds of the launch's bytes (a 99 KB block is one an SM on an RTX 4090 or
L40S, so 256 blocks need 256 SMs there).
"""
import threading

from . import _lib

_SCAN_ORDER = {"onepass": 0, "lookback": 1, "hierarchical": 2}
RECOMPUTE = "recompute"   # the pin that keeps the choice to the recompute variants (no variant is named so)
RESIDENT_BLOCKS_PER_SM = 2
SMEM_RESERVED_PER_BLOCK = 1024   # what the system keeps of an SM's shared memory per resident block


def recompute_variants(m, mixer):
    """The mixer's variants in manifest m that keep no projection for the
    backward; ValueError, saying how to make them, where there are none."""
    names = [n for n in m.variants_of(mixer) if m.variants[n].recompute]
    if not names:
        raise ValueError("variant=%r: no %s variant of %s keeps its projections out of the saved state (a grid "
                         "with recompute = { true }: lua/variants/recurrentgemma.lua has them)"
                         % (RECOMPUTE, mixer, m.path))
    return names


def resident_capacity(smem, device):
    """Blocks of smem dynamic shared bytes each that device (a DeviceInfo)
    holds at once, as far as the choice can tell without the driver: two
    an SM, fewer where its shared memory an SM (smem_per_sm) holds fewer."""
    per_sm = RESIDENT_BLOCKS_PER_SM
    if getattr(device, "smem_per_sm", None):
        per_sm = min(per_sm, device.smem_per_sm // (smem + SMEM_RESERVED_PER_BLOCK))
    return per_sm * device.sm_count


def default_rank(v, need, device):
    """The default rule's sort key of Variant v (manifest.Variant); need:
    (blocks, bytes) of its launch waiting across the most blocks
    (Manifest.resident_need); device: a DeviceInfo or None."""
    blocks, smem = need
    too_wide = device is not None and blocks > resident_capacity(smem, device)
    return (too_wide, v.materialized, v.recompute, _SCAN_ORDER.get(v.scan, len(_SCAN_ORDER)), v.prefix, not v.fused,
            not v.shared_sfu, not v.fused_output, not v.fused_write, v.chunk, v.name)


class Chooser:
    """Variant choice for one folder, cached per (mixer, shape, device, pin).

    manifest: manifest.Manifest of the folder (any target's; the attributes
    and shape rules are the same for every target); calibration: a
    calibration.Calibration or None."""

    def __init__(self, manifest, calibration=None):
        self.manifest = manifest
        self.calibration = calibration
        self._cache = {}
        self._lock = threading.Lock()

    def choose(self, mixer, B, L, D, device=None, pin="", need=frozenset()):
        """(variant name, why). device: a DeviceInfo (name, sm_count) or None
        (no GPU known: the calibration is not consulted); need: the state
        fields the call gives."""
        key = (mixer, B, L, D, device, pin, need)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._choose(mixer, B, L, D, device, pin, frozenset(need))
            with self._lock:
                self._cache[key] = hit
        return hit

    def _choose(self, mixer, B, L, D, device, pin, need):
        m = self.manifest
        s = _lib.shape(B, L, D)
        names = m.variants_of(mixer)
        shape = "%dx%dx%d" % (B, L, D)
        lean = pin == RECOMPUTE
        if lean:
            names, pin = recompute_variants(m, mixer), ""
        if pin:
            if pin not in m.variants or m.variants[pin].mixer != mixer:
                raise ValueError("pinned variant %r is not a %s variant of %s (it has: %s)"
                                 % (pin, mixer, m.path, ", ".join(names)))
            lacks = need - m.variants[pin].state
            if lacks:
                raise ValueError("pinned variant %s takes no %s (it takes: %s); a grid with %s makes variants "
                                 "that take %s" % (pin, ", ".join(sorted(lacks)),
                                 ", ".join(sorted(m.variants[pin].state)) or "none",
                                 "docs = { true }" if "cu_seqlens" in lacks else "resets = { true }",
                                 "cu_seqlens" if "cu_seqlens" in lacks else "reset marks"))
            why = m.check_shape(pin, s)
            if why:
                raise ValueError("pinned variant %s refuses %s: %s" % (pin, shape, why))
            return pin, "pinned"
        names = [n for n in names if need <= m.variants[n].state]
        # the leanest that takes it: a call with h0 runs a states variant where
        # the folder has one, not one that also takes cu_seqlens; a call
        # without a state one that takes none where the folder has one
        least = min((len(m.variants[n].state - need) for n in names), default=0)
        names = [n for n in names if len(m.variants[n].state - need) == least]
        if need:
            if not names:
                how = ("recur gen lua/variants/docs.lua makes variants taking cu_seqlens with a state per "
                       "document" if "cu_seqlens" in need else
                       "recur gen lua/variants/state.lua makes variants taking the row's map (map = { true })"
                       if "map_loga" in need else
                       "recur gen lua/variants/state.lua makes variants taking reset marks and states")
                raise ValueError("no %s variant of %s takes %s (%s)" % (mixer, m.path, ", ".join(sorted(need)), how))
        legal = [n for n in names if m.check_shape(n, s) is None]
        if not legal:
            reasons = sorted({m.check_shape(n, s) for n in names})
            raise ValueError("no %s variant of %s accepts x of shape %s: %s" % (mixer, m.path, shape,
                                                                                  "; ".join(reasons)))
        among = ", among the recompute variants" if lean else ""
        if self.calibration is not None and device is not None:
            for w in self.calibration.winners(mixer, B, L, D, device.name, m.generator):
                if w.variant in legal:
                    return w.variant, "calibrated at %dx%dx%d on %s (%s)%s" % (
                        w.shape + (device.name, self.calibration.path, among))
        best = min(legal, key=lambda n: default_rank(m.variants[n], m.resident_need(n, s), device))
        return best, "default rule" + among
