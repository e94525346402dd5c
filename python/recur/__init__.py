"""recur's generated kernels as PyTorch operators and modules.

    import recur
    layer = recur.RGLRU("out/ptx", width=1024).cuda()   # a folder of `recur gen`
    y = layer(x)                                          # x: bf16 [B, L, 1024] on a GPU
    state = layer.new_state(B)                            # sampling: fp32 [B, 1024]
    y_t = layer.step(x_t, state, kernels="out/decode")    # x_t [B, 1, 1024]; state advanced in place

The runtime is librecur.so ($RECUR_LIB, else the repository's
build/librecur.so, else the system loader's), reached through ctypes.
Layout of the package:
  _lib.py         librecur's C API as ctypes declarations, RecurError
  manifest.py     a generated folder's manifest (variants, parameters, sizes)
  calibration.py  the winners of a `recur calibrate` file
  choice.py       which variant runs a shape (pinned, calibrated, default rule)
  kernels.py      recur.load(): a folder, its choice and its devices
  device.py       the runtime and loaded variants on one device (librecur keeps the
                  thread's current context as it finds it)
  checks.py       what the operators accept
  ops.py          the torch operators, autograd, fake implementations
  modules.py      nn.Modules: Mixer, RGLRU, SAMU
  checkpoints.py  released RecurrentGemma RG-LRU weights under recur's names
  recurrentgemma.py  transformers' RecurrentGemma with its RG-LRU on recur's kernels
"""
from ._lib import RecurError
from .checkpoints import rglru_from_recurrentgemma
from .kernels import Kernels, load
from .modules import RGLRU, SAMU, Mixer, init_, parameter_count
from .ops import HAS_CUSTOM_OP, backward, decode_step, forward, mix, row_map
from .recurrentgemma import RecurrentGemmaRglru, apply_to_recurrentgemma

__all__ = ["RecurError", "Kernels", "load", "Mixer", "RGLRU", "SAMU", "init_", "parameter_count",
           "mix", "forward", "backward", "decode_step", "row_map", "HAS_CUSTOM_OP", "library_path",
           "rglru_from_recurrentgemma", "RecurrentGemmaRglru", "apply_to_recurrentgemma"]
__version__ = "0.1.0"


def library_path():
    """The path of the librecur.so in use (loads it)."""
    from ._lib import library
    return library().path
