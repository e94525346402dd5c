"""The calibration file `recur calibrate` writes (cli/calfile.h):

  {"schema_version": 1, "kind": "recur calibration",
   "entries": [{"mixer", "shape": {"batch", "length", "width"}, "gpu",
                "driver_version", "cuda_driver_api_version", "generator",
                "winner": NAME | null, ...}]}

Only the winners are read here. An entry matches a call by mixer and GPU
name, and by shape: the exact shape first, else the entry of the same
width nearest in tokens (B*L, on a log scale), since a winner changes
slowly with the token count (the H200 calibration has one winner per mixer
from 8192 to 131072 tokens). Entries of the manifest's own generator are
preferred over others; driver versions are not compared.
"""
import json
import math
from collections import namedtuple

Winner = namedtuple("Winner", "variant exact shape generator")
Winner.__doc__ = "A calibrated winner: the variant, whether the shape matched exactly, the entry's shape."


class Calibration:
    def __init__(self, path):
        self.path = path
        try:
            with open(path, "rb") as f:
                doc = json.load(f)
        except OSError as e:
            raise FileNotFoundError("calibration file %s: %s (write one with `recur calibrate --out %s`)"
                                    % (path, e.strerror, path)) from None
        except ValueError as e:
            raise ValueError("calibration file %s is not JSON: %s" % (path, e)) from None
        if not isinstance(doc, dict) or doc.get("kind") != "recur calibration":
            raise ValueError("%s is not a recur calibration file (its \"kind\" is %r)"
                             % (path, doc.get("kind") if isinstance(doc, dict) else None))
        self.entries = [e for e in doc.get("entries", []) if isinstance(e, dict)]

    def winners(self, mixer, B, L, D, gpu, generator):
        """The matching entries' winners, best match first (see the module doc)."""
        found = []
        for e in self.entries:
            s = e.get("shape") or {}
            if e.get("mixer") != mixer or e.get("gpu") != gpu or s.get("width") != D or not e.get("winner"):
                continue
            eb, el = s.get("batch"), s.get("length")
            if not isinstance(eb, int) or not isinstance(el, int) or eb < 1 or el < 1:
                continue
            exact = (eb, el) == (B, L)
            distance = abs(math.log(eb * el) - math.log(B * L))
            rank = (not exact, e.get("generator") != generator, distance)
            found.append((rank, Winner(e["winner"], exact, (eb, el, D), e.get("generator"))))
        found.sort(key=lambda r: r[0])
        return [w for _, w in found]
