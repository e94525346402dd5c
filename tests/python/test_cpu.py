"""The Python package on a machine without a GPU (CI): it imports against
the installed torch, finds librecur, reads a generated folder's manifest,
chooses variants, builds modules, reports a missing library, folder or
driver as an exception naming it, and its float64 reference reproduces
the golden cases. Tests that need a GPU skip with their reason; they are
gpu_torch_test.py's.

    RECUR_LIB=build/librecur.so RECUR_TEST_KERNELS=DIR python3 tests/python/test_cpu.py

RECUR_TEST_KERNELS: a folder of `recur gen tests/grids/representative.lua`
(tests/python_test.sh makes one); RECUR_TEST_RESETS_KERNELS: a folder of
variants taking reset marks (python_test.sh makes one); RECUR_GOLDENS: the
golden cases (default: the repository's tests/goldens).
"""
import ctypes
import json
import math
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import recur  # noqa: E402
import ref_torch  # noqa: E402
from recur import _lib  # noqa: E402
from recur.kernels import DeviceInfo  # noqa: E402

KERNELS = os.environ.get("RECUR_TEST_KERNELS", "")
RESETS_KERNELS = os.environ.get("RECUR_TEST_RESETS_KERNELS", "")
HEADS_KERNELS = os.environ.get("RECUR_TEST_HEADS_KERNELS", "")
RECOMPUTE_KERNELS = os.environ.get("RECUR_TEST_RECOMPUTE_KERNELS", "")
GOLDENS = os.environ.get("RECUR_GOLDENS") or os.path.join(REPO, "tests", "goldens")
H200 = DeviceInfo(0, "NVIDIA H200", 132)


def report(*a):
    print("     " + " ".join(str(x) for x in a), file=sys.stderr)


def kernels():
    if not KERNELS:
        raise unittest.SkipTest("RECUR_TEST_KERNELS is not set (a folder of `recur gen`; python_test.sh makes one)")
    return recur.load(KERNELS)


class Package(unittest.TestCase):
    def test_imports_against_this_torch(self):
        report("torch", torch.__version__, "; custom_op" if recur.HAS_CUSTOM_OP else "; autograd.Function fallback")
        if hasattr(torch.library, "custom_op"):
            self.assertTrue(recur.HAS_CUSTOM_OP)
            self.assertTrue(hasattr(torch.ops.recur, "mixer_forward"))
        else:
            self.assertTrue(hasattr(recur.ops, "_MixerFunction"))

    def test_finds_the_library(self):
        path = recur.library_path()
        report("librecur:", path)
        self.assertTrue(os.path.exists(path) or "/" not in path, path)

    def test_missing_library_is_named(self):
        saved, env = _lib._library, os.environ.get("RECUR_LIB")
        try:
            _lib._library = None
            os.environ["RECUR_LIB"] = os.path.join(tempfile.gettempdir(), "no-such-dir", "librecur.so")
            with self.assertRaises(recur.RecurError) as e:
                _lib.library()
            report(str(e.exception)[:160] + " ...")
            self.assertIn("RECUR_LIB", str(e.exception))
            self.assertIn("recur_shared", str(e.exception))
        finally:
            _lib._library = saved
            if env is None:
                os.environ.pop("RECUR_LIB", None)
            else:
                os.environ["RECUR_LIB"] = env

    def test_missing_symbol_is_named_when_called(self):
        lib = _lib.library()
        with self.assertRaises(recur.RecurError) as e:
            lib.fn("recur_no_such_function")
        self.assertIn("recur_no_such_function", str(e.exception))


class Folder(unittest.TestCase):
    def test_manifest(self):
        k = kernels()
        self.assertEqual(sorted(k.mixers()), ["rglru", "samu"])
        for mixer in k.mixers():
            report(mixer, len(k.variants(mixer)), "variants;", ", ".join(
                "%s%s %s" % (p.name, list(p.dims), p.init) for p in k.params(mixer, 1024)))
        # the spec's counts at D = 1024: 2*H*K*K + 3*D and 3*D + 4
        self.assertEqual(recur.parameter_count(k, "rglru", 1024), 134144)
        self.assertEqual(recur.parameter_count(k, "samu", 1024), 3076)
        self.assertEqual([p.name for p in k.params("rglru", 128)], list(ref_torch.RGLRU_PARAMS))
        self.assertEqual([p.name for p in k.params("samu", 128)], list(ref_torch.SAMU_PARAMS))

    def test_missing_folder_is_named(self):
        where = os.path.join(tempfile.gettempdir(), "no-such-kernels")
        with self.assertRaises(recur.RecurError) as e:
            recur.load(where)
        self.assertIn(where, str(e.exception))
        self.assertIn("recur gen", str(e.exception))

    def test_width_the_kernels_refuse(self):
        with self.assertRaises(ValueError) as e:
            recur.RGLRU(kernels(), 100)
        report(str(e.exception))
        self.assertIn("multiple of 64", str(e.exception))

    def test_workspace_sizes(self):
        k = kernels()
        if not _lib.library().has("recur_workspace_sizes"):
            reason = "librecur has no recur_workspace_sizes yet (declared in recur.h, not in this build)"
            print("     skip: " + reason, file=sys.stderr)
            self.skipTest(reason)
        for shape in ((2, 37, 128), (1, 8192, 1024)):
            for v in k.variants():
                saved, scratch = k.workspace_sizes(v, *shape)
                report("%-72s %dx%dx%d saved %10d scratch %10d" % ((v,) + shape + (saved, scratch)))
                self.assertGreaterEqual(saved, 0)
                self.assertGreaterEqual(scratch, 0)
        with self.assertRaises(recur.RecurError):
            k.workspace_sizes(k.variants()[0], 1, 10, 100)


def calibration_file(folder, winner):
    """A calibration file in folder naming winner for RG-LRU at 1x8192x1024 on the H200; its path."""
    doc = {"schema_version": 1, "kind": "recur calibration", "entries": [
        {"mixer": "rglru", "shape": {"batch": 1, "length": 8192, "width": 1024}, "gpu": "NVIDIA H200",
         "generator": "recur 0.1.0", "winner": winner}]}
    path = os.path.join(folder, "calibration.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


class Choice(unittest.TestCase):
    def test_default_rule(self):
        k = kernels()
        for mixer in ("rglru", "samu"):
            name, why = k.choose(mixer, 1, 8192, 1024, H200)
            report(mixer, "1x8192x1024 ->", name, "(%s)" % why)
            self.assertIn("prefix32_onepass_chunk8", name)
            self.assertEqual(why, "default rule")

    def test_a_small_gpu_avoids_waiting_grids_it_cannot_hold(self):
        name, _ = kernels().choose("rglru", 1, 8192, 1024, DeviceInfo(0, "small", 16))
        report("16 SMs ->", name)
        self.assertNotIn("onepass", name)

    def test_a_gpu_holding_one_block_an_sm_avoids_one_pass(self):
        # RG-LRU's one-pass bwd_apply waits across 256 blocks of 112656 bytes at
        # 1x8192x1024: 200 SMs of 164 KB hold one each (200), which the rule of
        # two an SM (400) took for enough; the H200's 228 KB hold two (264)
        k = kernels()
        one = DeviceInfo(0, "one block an SM", 200, 164 * 1024)
        name, _ = k.choose("rglru", 1, 8192, 1024, one)
        report("200 SMs of 164 KB ->", name)
        self.assertNotIn("onepass", name)
        name, _ = k.choose("rglru", 1, 8192, 1024, DeviceInfo(0, "NVIDIA H200", 132, 228 * 1024))
        self.assertIn("onepass", name)
        from recur.choice import resident_capacity
        self.assertEqual(resident_capacity(100368, DeviceInfo(0, "RTX 4090", 128, 100 * 1024)), 128)
        self.assertEqual(resident_capacity(112656, DeviceInfo(0, "H200", 132, 228 * 1024)), 264)
        self.assertEqual(resident_capacity(112656, DeviceInfo(0, "unknown", 100)), 200)
        self.assertEqual(resident_capacity(120000, DeviceInfo(0, "L4", 58, 100 * 1024)), 0)

    def test_shared_memory_an_sm_from_torch(self):
        from recur.ops import _smem_per_sm

        class Props:
            def __init__(self, major, minor, **kw):
                self.major, self.minor = major, minor
                self.__dict__.update(kw)
        self.assertEqual(_smem_per_sm(Props(8, 9)), 100 * 1024)
        self.assertEqual(_smem_per_sm(Props(8, 0)), 164 * 1024)
        self.assertEqual(_smem_per_sm(Props(9, 0)), 228 * 1024)
        self.assertIsNone(_smem_per_sm(Props(12, 0)))
        self.assertEqual(_smem_per_sm(Props(8, 9, shared_memory_per_multiprocessor=12345)), 12345)

    def test_pinned(self):
        k = kernels()
        pin = "fused_grouped_prefix64_hierarchical_chunk64"
        self.assertEqual(k.choose("rglru", 2, 37, 128, H200, pin), (pin, "pinned"))
        with self.assertRaises(ValueError):
            k.choose("rglru", 2, 37, 128, H200, "no_such_variant")
        with self.assertRaises(ValueError):
            k.choose("samu", 2, 37, 128, H200, pin)     # an RG-LRU variant
        with self.assertRaises(ValueError):
            recur.RGLRU(k, 128, variant="no_such_variant")

    def test_calibration(self):
        pin = "fused_grouped_prefix64_hierarchical_chunk64"
        with tempfile.TemporaryDirectory() as d:
            k = recur.load(KERNELS or kernels(), calibration_file(d, pin))
            exact = k.choose("rglru", 1, 8192, 1024, H200)
            near = k.choose("rglru", 2, 2048, 1024, H200)
            other_gpu = k.choose("rglru", 1, 8192, 1024, DeviceInfo(0, "NVIDIA H100 80GB HBM3", 132))
            other_width = k.choose("rglru", 1, 8192, 512, H200)
        for c in (exact, near, other_gpu, other_width):
            report(c)
        self.assertEqual(exact[0], pin)
        self.assertIn("calibrated at 1x8192x1024", exact[1])
        self.assertEqual(near[0], pin)
        self.assertEqual(other_gpu[1], "default rule")
        self.assertEqual(other_width[1], "default rule")

    def test_the_leanest_variant_that_takes_the_calls_state(self):
        # a folder of plain and state variants (RecurrentGemma's grid): a call
        # without a state runs a plain one even where the calibration's winner
        # takes marks; a call with marks runs that winner
        if not RESETS_KERNELS:
            self.skipTest("RECUR_TEST_RESETS_KERNELS is not set (python_test.sh makes one)")
        marks = "resets_fused_grouped_prefix32_onepass_chunk8"
        with tempfile.TemporaryDirectory() as d:
            k = recur.load(RESETS_KERNELS, calibration_file(d, marks))
            plain = k.choose("rglru", 1, 8192, 1024, H200)
            with_marks = k.choose("rglru", 1, 8192, 1024, H200, "", frozenset(("reset",)))
            with_h0 = k.choose("rglru", 1, 8192, 1024, H200, "", frozenset(("h0",)))
        report(plain, with_marks, with_h0)
        self.assertEqual(k.manifest.variants[plain[0]].state, frozenset())
        self.assertEqual(with_marks[0], marks)
        self.assertIn("calibrated", with_marks[1])
        self.assertIn("h0", k.manifest.variants[with_h0[0]].state)
        self.assertNotIn("map_loga", k.manifest.variants[with_h0[0]].state)

    def test_the_committed_calibration_reads(self):
        path = os.path.join(REPO, "bench", "results", "calibration_h200.json")
        if not os.path.exists(path):
            self.skipTest("no %s" % path)
        k = recur.load(KERNELS or kernels(), path)
        name, why = k.choose("samu", 1, 131072, 1024, H200)
        report("H200 calibration: samu 1x131072x1024 ->", name, "(%s)" % why.split(" (")[0])
        self.assertTrue(why.startswith("calibrated"), why)

    def test_not_a_calibration_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.json")
            with open(path, "w") as f:
                json.dump({"kind": "something else"}, f)
            with self.assertRaises(ValueError):
                recur.load(KERNELS or kernels(), path)


class Modules(unittest.TestCase):
    def test_initialisation_as_declared(self):
        g = torch.Generator().manual_seed(1)
        m = recur.RGLRU(kernels(), 1024, generator=g)
        self.assertEqual(tuple(m.Wa.shape), (16, 64, 64))
        self.assertAlmostEqual(m.Wa.std().item(), 1 / 8, delta=0.005)
        self.assertEqual(m.ba.abs().max().item(), 0.0)
        # softplus(lam) = -log(u) / 2 for u in [0.9^2, 0.999^2]
        sp = torch.nn.functional.softplus(m.lam.double())
        self.assertGreaterEqual(sp.min().item(), -math.log(0.999) - 1e-6)
        self.assertLessEqual(sp.max().item(), -math.log(0.9) + 1e-6)
        s = recur.SAMU(kernels(), 256, generator=g)
        self.assertAlmostEqual(s.theta.item(), math.log(8), places=6)
        self.assertEqual(s.omega.item(), 0.5)
        self.assertAlmostEqual(s.wu.std().item(), 1.0, delta=0.15)
        report(m)
        report(s)

    def test_state_dict_round_trip(self):
        a = recur.SAMU(kernels(), 128)
        b = recur.SAMU(kernels(), 128, generator=torch.Generator().manual_seed(7))
        b.load_state_dict(a.state_dict())
        for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
            self.assertTrue(torch.equal(p, q), n)
        self.assertEqual(list(a.state_dict()), list(ref_torch.SAMU_PARAMS))

    def test_cpu_input_is_refused_with_the_reason(self):
        m = recur.RGLRU(kernels(), 128)
        x = torch.randn(2, 37, 128).bfloat16()
        with self.assertRaises(ValueError) as e:
            m(x)
        report(str(e.exception))
        self.assertIn("CUDA", str(e.exception))
        with self.assertRaises(TypeError):
            m([1, 2, 3])
        with self.assertRaises(TypeError):
            recur.mix(x, list(m.parameters()), kernels(), "rglru", h0=None)


class Driver(unittest.TestCase):
    def test_missing_driver_is_named(self):
        k = kernels()
        saved = os.environ.get("RECUR_LIBCUDA")
        os.environ["RECUR_LIBCUDA"] = os.path.join(tempfile.gettempdir(), "no-such-libcuda.so")
        try:
            with self.assertRaises(recur.RecurError) as e:
                k.on(0)
        finally:
            if saved is None:
                os.environ.pop("RECUR_LIBCUDA", None)
            else:
                os.environ["RECUR_LIBCUDA"] = saved
        report(str(e.exception))
        self.assertIn("libcuda", str(e.exception))
        self.assertIn("device 0", str(e.exception))


class Reference(unittest.TestCase):
    def cases(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("no numpy to read the golden .npy files")
        if not os.path.isdir(GOLDENS):
            self.fail("golden directory %s not found (RECUR_GOLDENS overrides it)" % GOLDENS)
        for case in sorted(os.listdir(GOLDENS)):
            d = os.path.join(GOLDENS, case)
            if os.path.isdir(d):
                yield case, case.split("_B")[0], (lambda n, d=d: torch.from_numpy(numpy.load(os.path.join(d, n + ".npy"))))

    def test_goldens(self):
        n = 0
        for case, mixer, load in self.cases():
            names = ref_torch.MIXERS[mixer][1]
            y, dx, grads = ref_torch.forward_backward(mixer, load("x"), [load(p) for p in names], load("dy"))
            errs = [("y", ref_torch.rel_l2(y, load("y"))), ("dx", ref_torch.rel_l2(dx, load("dx")))]
            errs += [("d" + p, ref_torch.rel_l2(g, load("d" + p))) for p, g in zip(names, grads)]
            worst = max(e for _, e in errs)
            report("%-20s max rel err %.1e over %s" % (case, worst, ", ".join(k for k, _ in errs)))
            self.assertLessEqual(worst, 1e-10, errs)
            n += 1
        self.assertGreaterEqual(n, 4)

    def test_gradients_against_finite_differences(self):
        g = torch.Generator().manual_seed(3)
        for mixer in ("rglru", "samu"):
            fn, _ = ref_torch.MIXERS[mixer]
            x = torch.randn(2, 5, 64, generator=g, dtype=torch.float64).requires_grad_(True)
            ps = [p.double().requires_grad_(True) for p in ref_torch.init_params(mixer, 64, g)]
            ok = torch.autograd.gradcheck(lambda *a: fn(*a), (x, *ps), fast_mode=True)
            self.assertTrue(ok, mixer)


def stand_in(test, k):
    """The operators' path to C on the CPU (see Marshalling): k's variants
    replaced by a stand-in that checks what it gets and records each call
    in test.calls, with the reset marks' address (or None)."""
    test.k = k
    if not _lib.library().has("recur_forward_ws"):
        test.skipTest("librecur has no recur_forward_ws yet")
    test.calls = []
    test.indexes = []   # the decode step's slot index address per forward (0: none)
    test.docs = []      # (cu_seqlens address or 0, ndocs) per call

    class Variant:
        def __init__(self, name):
            self.name = name

        def forward(self, s, io, ws, stream):
            n = s.B * s.L * s.D
            test.assertEqual((ws.saved_bytes, ws.scratch_bytes), k.workspace_sizes(self.name, s.B, s.L, s.D))
            test.assertEqual((io.dy, io.dx, bool(io.grads)), (0, 0, False))
            test.calls.append(("forward", self.name, stream, [io.params[i] for i in range(5)], _marks(io),
                               _states(io)))
            test.indexes.append(io.state.contents.index or 0 if io.state else 0)
            test.docs.append(_docs(io))
            ctypes.memmove(io.y, io.x, 2 * n)
            ns = _nstates(io, s)
            if _states(io)[1]:   # hT: 7 everywhere
                (ctypes.c_float * ns).from_address(_states(io)[1])[:] = [7.0] * ns
            for at, v in zip(_maps(io), (-1.5, 2.5)):   # the row's map: map_loga -1.5, map_h 2.5
                if at:
                    (ctypes.c_float * ns).from_address(at)[:] = [v] * ns

        def backward(self, s, io, ws, stream):
            n = s.B * s.L * s.D
            test.assertEqual(ws.saved_bytes, k.workspace_sizes(self.name, s.B, s.L, s.D)[0])
            test.calls.append(("backward", self.name, stream, _marks(io), _states(io)))
            test.docs.append(_docs(io))
            ns = _nstates(io, s)
            if _states(io)[3]:   # dh0: 3 everywhere
                (ctypes.c_float * ns).from_address(_states(io)[3])[:] = [3.0] * ns
            ctypes.memmove(io.dx, io.dy, 2 * n)
            for i, spec in enumerate(test.k.params("rglru", s.D)):
                count = math.prod(spec.dims)
                (ctypes.c_float * count).from_address(io.grads[i])[:] = [i + 1.0] * count

    class OnDevice:
        class rt:
            capability = None

        def variant(self, name):
            return Variant(name)

    class Stream:
        cuda_stream = 0x5eed

    def x_shape_anywhere(x, mixer):
        return tuple(int(n) for n in x.shape)

    patches = [mock.patch.object(test.k, "on", lambda ordinal: OnDevice()),
               mock.patch.object(recur.ops, "device_info", lambda index: H200),
               mock.patch.object(recur.checks, "x_shape", x_shape_anywhere),
               mock.patch.object(torch.cuda, "current_stream", lambda device=None: Stream()),
               mock.patch.object(_lib, "WS_ALIGN", 64)]   # the CPU allocator's; torch's CUDA one gives 512
    for p in patches:
        p.start()
        test.addCleanup(p.stop)


def _marks(io):
    return io.state.contents.reset if io.state else None


def _docs(io):
    """(cu_seqlens address or 0, ndocs) of the call's state"""
    return (io.state.contents.cu_seqlens or 0, io.state.contents.ndocs) if io.state else (0, 0)


def _nstates(io, s):
    """elements of each state the call gives: ndocs x D with cu_seqlens, else B x D"""
    cu, nd = _docs(io)
    return (nd if cu else s.B) * s.D


def _states(io):
    """(h0, hT, dhT, dh0) addresses of the call's state (0: none)."""
    if not io.state:
        return (0, 0, 0, 0)
    st = io.state.contents
    return (st.h0 or 0, st.hT or 0, st.dhT or 0, st.dh0 or 0)


def _maps(io):
    """(map_loga, map_h) addresses of the call's state (0: none)."""
    if not io.state:
        return (0, 0)
    return (io.state.contents.map_loga or 0, io.state.contents.map_h or 0)


class Marshalling(unittest.TestCase):
    """The operators' path to C without a GPU: CPU tensors stand in for
    device ones and a stand-in variant checks the recur_io and recur_ws it
    gets (addresses, the manifest's workspace sizes, the stream), then
    copies x to y, dy to dx and writes each gradient as its parameter's
    number. Autograd, the saved workspace and the checks on dy run as on a
    GPU; the kernels are gpu_torch_test.py's."""

    def setUp(self):
        stand_in(self, kernels())

    def test_autograd_through_the_operators(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        dy = torch.randn(2, 37, 128).bfloat16()
        y = m(x)
        y.backward(dy)
        self.assertTrue(torch.equal(y, x))
        self.assertTrue(torch.equal(x.grad, dy))
        self.assertEqual([p.grad.flatten()[0].item() for p in m.parameters()], [1.0, 2.0, 3.0, 4.0, 5.0])
        fwd, bwd = self.calls
        self.assertEqual(fwd[2], 0x5eed)
        self.assertEqual(fwd[3], [p.data_ptr() for p in m.parameters()])
        self.assertEqual(fwd[1], bwd[1])            # the backward runs its forward's variant
        report("forward and backward of", fwd[1], "at 2x37x128 through", "custom_op" if recur.HAS_CUSTOM_OP else
               "autograd.Function")

    def test_the_backward_fills_nothing(self):
        # an output the loss does not use (the saved workspace, an unused
        # final state) gets no tensor of zeros from autograd: one the size
        # of the saved workspace cost 0.68 ms and 2.2 GB a backward at
        # 1x131072x4096 (bench/experiments/2026-12-07-torch-layer-overhead/)
        from torch.utils._python_dispatch import TorchDispatchMode

        class Ops(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.seen = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.seen.append(str(func))
                return func(*args, **(kwargs or {}))

        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        y = m(x)
        with Ops() as ops:
            y.backward(torch.randn(2, 37, 128).bfloat16())
        self.assertEqual(len(self.calls), 2)
        filled = [f for f in ops.seen if any(w in f for w in ("zero", "fill", "full"))]
        self.assertEqual(filled, [], "the backward filled tensors: %s" % filled)

    def test_a_bf16_module_runs_on_float32_copies(self):
        # .bfloat16() on a model must not break its recur layers: the kernels
        # get exact float32 copies, the gradients come back in bf16
        m = recur.RGLRU(self.k, 128).bfloat16()
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        y = m(x)                  # the copies live while autograd holds them for the backward
        (fwd,) = self.calls
        own = [p.data_ptr() for p in m.parameters()]
        self.assertTrue(all(a not in own for a in fwd[3]))   # copies, not the bf16 tensors
        for p, at in zip(m.parameters(), fwd[3]):
            n = p.numel()
            seen = torch.tensor((ctypes.c_float * n).from_address(at)[:n])
            self.assertTrue(torch.equal(seen, p.detach().float().flatten()), "the copy is the parameter, exactly")
        y.backward(torch.randn(2, 37, 128).bfloat16())
        self.assertEqual([(p.grad.dtype, p.grad.flatten()[0].item()) for p in m.parameters()],
                         [(torch.bfloat16, float(i + 1)) for i in range(5)])
        with self.assertRaises(TypeError) as e:       # the functional form takes float32 only
            recur.mix(x, [p.detach() for p in m.parameters()], self.k, "rglru")
        self.assertIn("float32", str(e.exception))

    def test_jit_trace_is_refused_without_the_custom_ops(self):
        # the eager path's kernels run outside what torch.jit.trace records:
        # a traced module would return tensors no kernel wrote
        if recur.HAS_CUSTOM_OP:
            self.skipTest("torch %s traces through the custom ops (gpu_torch_test.py)" % torch.__version__)
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16()
        with self.assertRaises(RuntimeError) as e:
            torch.jit.trace(m, (x,), check_trace=False)
        self.assertIn("torch.compile", str(e.exception))
        self.assertEqual(self.calls, [])

    def test_a_second_derivative_is_refused(self):
        # the backward's kernels have no derivative: a gradient of a
        # gradient must fail, not come back as zeros
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        (gx,) = torch.autograd.grad(m(x).float().sum(), x, create_graph=True)
        self.assertEqual(gx.float().mean().item(), 1.0)   # the first derivative itself is there (the stand-in's dy)
        penalty = (gx.float() ** 2).sum() + (x.float() ** 2).sum()   # as a gradient penalty adds one
        with self.assertRaises(RuntimeError) as e:
            torch.autograd.grad(penalty, x)
        self.assertIn("second derivative", str(e.exception))

    def test_an_expanded_dy_is_made_contiguous(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        m(x).sum().backward()        # dy: a stride-0 expansion of one element
        self.assertEqual(x.grad.float().mean().item(), 1.0)

    def test_raw_forward_and_backward(self):
        m = recur.SAMU(self.k, 128)
        ps = list(m.parameters())
        x = torch.randn(1, 50, 128).bfloat16()
        y, saved = recur.forward(x, ps, self.k, "samu")
        self.assertEqual(saved.dtype, torch.uint8)
        self.assertEqual(saved.numel(), self.k.workspace_sizes(self.calls[0][1], 1, 50, 128)[0])
        with self.assertRaises(ValueError):
            recur.backward(y, x, ps, saved[1:], self.k, "samu")    # not the forward's saved region

    def test_a_misaligned_x_is_refused(self):
        m = recur.RGLRU(self.k, 128)
        buf = torch.empty(2 * 37 * 128 + 1, dtype=torch.bfloat16)
        with self.assertRaises(ValueError) as e:
            m(buf[1:].view(2, 37, 128))
        self.assertIn("16-byte", str(e.exception))
        self.assertEqual(self.calls, [])


class ReferenceResets(unittest.TestCase):
    """ref_torch's reset marks mean what util/seqstate.h says: a row with
    marks gives, document by document, what each document gives alone (y,
    dx and every parameter gradient summed over the documents)."""

    def test_marks_split_a_row_into_documents(self):
        g = torch.Generator().manual_seed(7)
        for mixer in ("rglru", "samu"):
            ps = ref_torch.init_params(mixer, 128, g)
            x = torch.randn(1, 50, 128, generator=g, dtype=torch.float64)
            dy = torch.randn(1, 50, 128, generator=g, dtype=torch.float64)
            starts = [0, 1, 2, 17, 49]             # consecutive marks, and one at the last token
            marks = torch.zeros(1, 50, dtype=torch.bool)
            marks[0, starts[1:]] = True
            y, dx, gp = ref_torch.forward_backward(mixer, x, ps, dy, marks)
            ends = starts[1:] + [50]
            parts = [ref_torch.forward_backward(mixer, x[:, a:b], ps, dy[:, a:b]) for a, b in zip(starts, ends)]
            worst = max([ref_torch.rel_l2(y, torch.cat([p[0] for p in parts], 1)),
                         ref_torch.rel_l2(dx, torch.cat([p[1] for p in parts], 1))] +
                        [ref_torch.rel_l2(gp[i], sum(p[2][i] for p in parts)) for i in range(len(gp))])
            self.assertLess(worst, 1e-12, mixer)
            report("reference with marks = documents apart:", mixer, "worst %.1e" % worst)


class ReferenceStates(unittest.TestCase):
    """ref_torch's initial and final states mean what util/seqstate.h says: a
    row run in two calls, the second from the first's hT, gives the whole
    row's y and hT; and chaining the second's dh0 into the first as dhT gives
    the whole row's dx and parameter gradients."""

    def test_two_calls_are_one_row(self):
        g = torch.Generator().manual_seed(11)
        for mixer in ("rglru", "samu"):
            ps = ref_torch.init_params(mixer, 128, g)
            x = torch.randn(2, 60, 128, generator=g, dtype=torch.float64)
            dy = torch.randn(2, 60, 128, generator=g, dtype=torch.float64)
            dhT = torch.randn(2, 128, generator=g, dtype=torch.float64)
            y, dx, gp, hT, _ = ref_torch.forward_backward(mixer, x, ps, dy, dhT=dhT)
            first = ref_torch.forward_backward(mixer, x[:, :23], ps, dy[:, :23], dhT=dhT * 0)   # for its hT
            second = ref_torch.forward_backward(mixer, x[:, 23:], ps, dy[:, 23:], h0=first[3], dhT=dhT)
            # the first call's loss gets the second's dh0 as its final state's gradient
            first = ref_torch.forward_backward(mixer, x[:, :23], ps, dy[:, :23], dhT=second[4])
            worst = max([ref_torch.rel_l2(torch.cat([first[0], second[0]], 1), y),
                         ref_torch.rel_l2(second[3], hT),
                         ref_torch.rel_l2(torch.cat([first[1], second[1]], 1), dx)] +
                        [ref_torch.rel_l2(a + b, c) for a, b, c in zip(first[2], second[2], gp)])
            self.assertLess(worst, 1e-12, mixer)
            report("reference in two calls = one row:", mixer, "worst %.1e" % worst)


class Heads256(unittest.TestCase):
    """RG-LRU with RecurrentGemma's heads of 256 channels (projections apart,
    tests/grids/apart.lua): the layer takes its parameters' shapes from the
    manifest, refuses a width the heads do not divide, and sizes the
    projections' saved workspace."""

    def setUp(self):
        if not HEADS_KERNELS:
            self.skipTest("RECUR_TEST_HEADS_KERNELS is not set (python_test.sh makes one)")
        self.k = recur.load(HEADS_KERNELS)

    def test_parameters_of_heads_of_256(self):
        m = recur.RGLRU(self.k, 2560, generator=torch.Generator().manual_seed(1))
        self.assertEqual(tuple(m.Wa.shape), (10, 256, 256))
        self.assertEqual(tuple(m.Wx.shape), (10, 256, 256))
        self.assertEqual(tuple(m.ba.shape), (2560,))
        self.assertAlmostEqual(m.Wa.std().item(), 1 / 16, delta=0.001)
        report(m)

    def test_a_width_the_heads_do_not_divide(self):
        with self.assertRaises(ValueError) as e:
            recur.RGLRU(self.k, 2112)   # 33 x 64, no multiple of 256
        report(str(e.exception))
        self.assertIn("multiple of 256", str(e.exception))

    def test_the_projections_are_saved(self):
        if not _lib.library().has("recur_workspace_sizes"):
            self.skipTest("librecur has no recur_workspace_sizes")
        B, L, D = 1, 1000, 2560
        for v in self.k.variants():
            saved, scratch = self.k.workspace_sizes(v, B, L, D)
            report("%-48s saved %10d scratch %10d" % (v, saved, scratch))
            self.assertGreaterEqual(saved, 2 * B * L * D * 2)       # both projections, bf16
            self.assertGreaterEqual(scratch, 2 * B * L * D * 2 + B * L * D * 4)   # their adjoints, dx's own term


class Recompute(unittest.TestCase):
    """A variant whose backward makes the projections again (recompute) beside
    its twin that keeps them: the default choice runs the twin (faster); the
    recompute variant's forward keeps B L D x 4 bytes fewer for the
    backward, and runs through autograd when pinned, the backward given the
    forward's smaller saved region."""

    TWIN = "apart_fused_grouped_prefix32_onepass_chunk8"
    LEAN = "apart_recompute_fused_grouped_prefix32_onepass_chunk8"

    def setUp(self):
        if not RECOMPUTE_KERNELS:
            self.skipTest("RECUR_TEST_RECOMPUTE_KERNELS is not set (python_test.sh makes one)")
        self.k = recur.load(RECOMPUTE_KERNELS)

    def test_the_default_keeps_the_projections(self):
        self.assertEqual(self.k.choose("rglru", 1, 8192, 2560, H200)[0], self.TWIN)
        self.assertTrue(self.k.manifest.variants[self.LEAN].recompute)
        self.assertFalse(self.k.manifest.variants[self.TWIN].recompute)

    def test_it_keeps_four_bytes_an_element_fewer(self):
        if not _lib.library().has("recur_workspace_sizes"):
            self.skipTest("librecur has no recur_workspace_sizes")
        for B, L, D in ((1, 1000, 2560), (3, 77, 512)):
            (s0, c0), (s1, c1) = (self.k.workspace_sizes(v, B, L, D) for v in (self.TWIN, self.LEAN))
            report("%dx%dx%d: saved %d -> %d, scratch %d -> %d" % (B, L, D, s0, s1, c0, c1))
            self.assertEqual(s0 - s1, B * L * D * 4)
            self.assertGreaterEqual(c1, c0)

    def test_asked_for_by_its_option(self):
        name, why = self.k.choose("rglru", 1, 8192, 2560, H200, "recompute")
        report(name, why)
        self.assertEqual(name, self.LEAN)
        self.assertIn("among the recompute variants", why)
        heads = recur.load(HEADS_KERNELS) if HEADS_KERNELS else None
        if heads is not None:   # apart.lua's grid has none: said, with where they are
            with self.assertRaises(ValueError) as e:
                heads.choose("rglru", 1, 8192, 2560, H200, "recompute")
            report(str(e.exception))
            self.assertIn("recurrentgemma.lua", str(e.exception))
            with self.assertRaises(ValueError):
                recur.RGLRU(heads, 2560, variant="recompute")

    def test_pinned_it_runs_through_autograd(self):
        stand_in(self, self.k)
        for pin in (self.LEAN, "recompute"):
            self.calls.clear()
            m = recur.RGLRU(self.k, 512, variant=pin)
            x = torch.randn(3, 77, 512).bfloat16().requires_grad_(True)
            m(x).backward(torch.randn(3, 77, 512).bfloat16())
            self.assertEqual([c[:2] for c in self.calls], [("forward", self.LEAN), ("backward", self.LEAN)])


class RecurrentGemmaCheckpoint(unittest.TestCase):
    """A released RecurrentGemma RG-LRU's weights (transformers' or
    recurrentgemma's names) under recur's: the same layer, checked against
    transformers' forward in float64, and refusals naming what is wrong."""

    PREFIX = "model.layers.3.temporal_block.rg_lru."

    def test_the_imported_layer_is_the_released_one(self):
        gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
        B, L, H, K = 2, 37, 2, 64
        state = ref_torch.released_rglru(H, K, 0, self.PREFIX)
        params = recur.rglru_from_recurrentgemma(state, self.PREFIX)
        self.assertEqual(list(params), ["Wa", "ba", "Wx", "bx", "lam"])
        self.assertTrue(all(p.dtype == torch.float32 for p in params.values()))
        x = torch.randn(B, L, H * K, generator=gen).bfloat16()
        pos = torch.arange(L).repeat(B, 1)
        pos[1, 20:] -= 20   # row 1: a second document from t = 20
        want = ref_torch.hf_rglru(x, state, self.PREFIX, pos)
        got = ref_torch.rglru(x.double(), *(params[n].double() for n in ("Wa", "ba", "Wx", "bx", "lam")),
                              resets=pos == 0)
        err = (got - want).abs().max().item()
        report("recur's RG-LRU on the imported weights vs transformers' forward, float64: max |diff| %.2e" % err)
        self.assertLess(err, 1e-12)
        # swapped gates are no longer the layer: the comparison can fail
        wrong = ref_torch.rglru(x.double(), *(params[n].double() for n in ("Wx", "bx", "Wa", "ba", "lam")),
                                resets=pos == 0)
        self.assertGreater((wrong - want).abs().max().item(), 1e-3)

    def test_both_releases_names_give_the_same_weights(self):
        a = recur.rglru_from_recurrentgemma(ref_torch.released_rglru(2, 64, 0, "rg_lru."), "rg_lru.")
        b = recur.rglru_from_recurrentgemma(ref_torch.released_rglru(2, 64, 1, "rg_lru."), "rg_lru.")
        for n in a:
            self.assertTrue(torch.equal(a[n], b[n]), n)
        self.assertEqual(tuple(a["ba"].shape), (128,))

    def test_a_module_from_the_checkpoint(self):
        k = kernels()
        state = ref_torch.released_rglru(2, 64, 1)
        m = recur.RGLRU.from_recurrentgemma(k, state)
        self.assertEqual(m.width, 128)
        self.assertTrue(torch.equal(m.Wa, state["a_gate.w"].float()))
        self.assertTrue(torch.equal(m.bx, state["input_gate.b"].float().reshape(128)))
        # heads of 256 (RecurrentGemma 2B) into a folder whose RG-LRU has heads of 64
        with self.assertRaises(ValueError) as e:
            recur.RGLRU.from_recurrentgemma(k, ref_torch.released_rglru(10, 256))
        report(str(e.exception))
        self.assertIn("10 heads of 256 channels (width 2560)", str(e.exception))
        self.assertIn("recurrentgemma.lua", str(e.exception))
        if HEADS_KERNELS:
            state = ref_torch.released_rglru(10, 256, 0, self.PREFIX)
            m = recur.RGLRU.from_recurrentgemma(recur.load(HEADS_KERNELS), state, self.PREFIX)
            self.assertEqual((m.width, tuple(m.Wa.shape)), (2560, (10, 256, 256)))

    def test_refusals_name_the_tensor(self):
        state = ref_torch.released_rglru(2, 64, 0, self.PREFIX)
        with self.assertRaises(KeyError) as e:
            recur.rglru_from_recurrentgemma(state, "model.layers.4.temporal_block.rg_lru.")
        report(e.exception.args[0])
        self.assertIn("no RG-LRU layer under prefix 'model.layers.4.temporal_block.rg_lru.'", e.exception.args[0])
        self.assertIn("its RG-LRU layers: " + self.PREFIX, e.exception.args[0])
        del state[self.PREFIX + "input_gate_bias"]
        with self.assertRaises(KeyError) as e:
            recur.rglru_from_recurrentgemma(state, self.PREFIX)
        self.assertIn(self.PREFIX + "input_gate_bias missing (Hugging Face transformers names)",
                      e.exception.args[0])
        state[self.PREFIX + "input_gate_bias"] = torch.zeros(2, 32)
        with self.assertRaises(ValueError) as e:
            recur.rglru_from_recurrentgemma(state, self.PREFIX)
        report(str(e.exception))
        self.assertIn(self.PREFIX + "input_gate_bias: shape (2, 32), expected [128]", str(e.exception))


class _StateFolder(unittest.TestCase):
    """The stand-in over the folder of variants taking a sequence state."""

    def setUp(self):
        if not RESETS_KERNELS:
            self.skipTest("RECUR_TEST_RESETS_KERNELS is not set (python_test.sh makes one)")
        stand_in(self, recur.load(RESETS_KERNELS))


class ResetMarks(_StateFolder):
    """resets= (packed documents) through the operators to C: the call runs a
    variant that takes reset marks, both passes get the marks' address in
    recur_io.state, bool marks go as bytes, wrong marks raise, and a folder or
    pinned variant without them says how to get one."""

    def test_both_passes_get_the_marks(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        marks = torch.zeros(2, 37, dtype=torch.bool)
        marks[:, [5, 6, 36]] = True
        m(x, resets=marks).sum().backward()
        fwd, bwd = self.calls
        self.assertEqual(fwd[4], marks.data_ptr())   # a bool tensor is read as its bytes, no copy
        self.assertEqual(bwd[3], marks.data_ptr())
        self.assertIn("reset", self.k.manifest.variants[fwd[1]].state)
        self.assertEqual(fwd[1], bwd[1])
        report("resets= reach both passes of", fwd[1])

    def test_without_marks_none_reach_c(self):
        recur.RGLRU(self.k, 128)(torch.randn(1, 20, 128).bfloat16())
        self.assertIsNone(self.calls[0][4])

    def test_wrong_marks_are_refused(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16()
        for marks, err in ((torch.zeros(2, 36, dtype=torch.bool), ValueError),
                           (torch.zeros(2, 37, dtype=torch.float32), TypeError),
                           (torch.zeros(37, 2, dtype=torch.bool).t(), ValueError),
                           ([0] * 74, TypeError)):
            with self.assertRaises(err) as e:
                m(x, resets=marks)
            self.assertIn("resets", str(e.exception))
        self.assertEqual(self.calls, [])

    def test_cu_seqlens_become_marks(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(1, 37, 128).bfloat16().requires_grad_(True)
        for cu in (torch.tensor([0, 5, 6, 37], dtype=torch.int32), torch.tensor([0, 5, 6, 37])):
            marks = recur.ops.cu_seqlens_marks(cu, x, "rglru")
            self.assertEqual((marks.shape, marks.dtype), (torch.Size([1, 37]), torch.uint8))
            self.assertEqual(marks[0].nonzero().flatten().tolist(), [5, 6])   # not 0, not L
            self.calls.clear()
            m(x, cu_seqlens=cu).sum().backward()
            fwd, bwd = self.calls
            self.assertIsNotNone(fwd[4])
            self.assertEqual(fwd[4], bwd[3])     # the backward gets the forward's marks
        report("cu_seqlens [0, 5, 6, 37] reach C as marks at 5 and 6 through", fwd[1])

    def test_wrong_cu_seqlens_are_refused(self):
        m = recur.RGLRU(self.k, 128)
        x1, x2 = torch.randn(1, 37, 128).bfloat16(), torch.randn(2, 37, 128).bfloat16()
        cu = torch.tensor([0, 5, 37], dtype=torch.int32)
        for call, err, word in ((lambda: m(x2, cu_seqlens=cu), ValueError, "one row"),
                                (lambda: m(x1, cu_seqlens=cu.float()), TypeError, "int32"),
                                (lambda: m(x1, cu_seqlens=[0, 5, 37]), TypeError, "torch.Tensor"),
                                (lambda: m(x1, cu_seqlens=cu, resets=torch.zeros(1, 37, dtype=torch.bool)),
                                 ValueError, "one or the other"),
                                (lambda: m(x1, cu_seqlens=cu, initial_state=torch.zeros(3, 128)), ValueError,
                                 "[N (documents), D] = [2, 128]"),
                                (lambda: m(x1, cu_seqlens=cu, initial_state=torch.zeros(2, 128).double()), TypeError,
                                 "float32"),
                                (lambda: m(torch.randn(1, 1, 128).bfloat16(), cu_seqlens=cu,
                                           output_final_state=True), ValueError, "2 documents in 1 tokens")):
            with self.assertRaises(err) as e:
                call()
            self.assertIn(word, str(e.exception))
        self.assertEqual(self.calls, [])

    def test_documents_with_a_state_each(self):
        """cu_seqlens with initial_state / output_final_state: a docs variant,
        the offsets as int32 and their count in both passes, states [N, D]"""
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(1, 37, 128).bfloat16().requires_grad_(True)
        cu = torch.tensor([0, 5, 6, 37])
        h0 = torch.randn(3, 128, requires_grad=True)
        self.calls.clear()
        self.docs.clear()
        y, hT = m(x, cu_seqlens=cu, initial_state=h0, output_final_state=True)
        self.assertEqual(hT.shape, torch.Size([3, 128]))
        self.assertTrue(bool((hT == 7).all()))   # the stand-in's hT, all N rows of it
        (y.float().sum() + hT.sum()).backward()
        fwd, bwd = self.calls
        self.assertTrue(fwd[1].startswith("docs_") and fwd[1] == bwd[1])
        self.assertIn("cu_seqlens", self.k.manifest.variants[fwd[1]].state)
        self.assertFalse(fwd[4])                  # no reset marks: the offsets go as they are
        (cu_f, nd_f), (cu_b, nd_b) = self.docs
        self.assertTrue(cu_f != 0 and cu_f == cu_b and nd_f == nd_b == 3)
        self.assertEqual(fwd[5][0], h0.data_ptr())
        self.assertTrue(bwd[4][2] != 0 and bwd[4][3] != 0)   # dhT and dh0 in the backward
        self.assertEqual(h0.grad.shape, torch.Size([3, 128]))
        self.assertTrue(bool((h0.grad == 3).all()))          # dh0, all N rows, back through autograd
        report("cu_seqlens [0, 5, 6, 37] with states [3, 128] reach C through", fwd[1])

    def test_the_leanest_variant_that_takes_the_state_runs(self):
        # a folder with states and docs variants: h0 alone runs a states one
        # (not a docs one), marks a resets one, cu_seqlens a docs one
        for need, prefix in ((("h0",), "states_"), (("reset",), "resets_"), (("cu_seqlens", "h0"), "docs_")):
            name, _ = self.k.choose("rglru", 1, 37, 128, H200, "", frozenset(need))
            self.assertTrue(name.startswith(prefix), (need, name))

    def test_a_folder_without_docs_variants_says_how(self):
        with self.assertRaises(ValueError) as e:
            kernels().choose("rglru", 1, 37, 128, H200, "", frozenset(("cu_seqlens", "h0")))
        self.assertIn("docs.lua", str(e.exception))

    def test_a_folder_without_them_says_how(self):
        plain = kernels()
        with self.assertRaises(ValueError) as e:
            plain.choose("rglru", 2, 37, 128, H200, "", frozenset(("reset",)))
        self.assertIn("state.lua", str(e.exception))
        name = plain.variants("rglru")[0]
        with self.assertRaises(ValueError) as e:
            plain.choose("rglru", 2, 37, 128, H200, name, frozenset(("reset",)))
        self.assertIn("resets = { true }", str(e.exception))


class RowMap(_StateFolder):
    """recur.row_map: a variant taking the map runs, its forward alone,
    with h0, hT, map_loga and map_h in recur_io.state, and what C wrote
    comes back; without initial_state, or from a folder without map
    variants, it says what to give."""

    def test_the_map_reaches_c_and_comes_back(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16()
        h0 = torch.zeros(2, 128)
        y, hT, mla, mh = recur.row_map(x, list(m.parameters()), self.k, "rglru", h0)
        self.assertEqual(len(self.calls), 1)   # the forward alone
        fwd = self.calls[0]
        self.assertEqual(fwd[0], "forward")
        self.assertIn("map_loga", self.k.manifest.variants[fwd[1]].state)
        self.assertEqual(fwd[5][:2], (h0.data_ptr(), hT.data_ptr()))
        for t, v in ((hT, 7.0), (mla, -1.5), (mh, 2.5)):
            self.assertEqual((t.shape, t.dtype), (torch.Size([2, 128]), torch.float32))
            self.assertTrue(bool((t == v).all()))
        self.assertTrue(torch.equal(y, x))     # the stand-in's y
        report("recur.row_map reaches C through", fwd[1])

    def test_without_initial_state_it_says_what_to_give(self):
        m = recur.RGLRU(self.k, 128)
        with self.assertRaises(ValueError) as e:
            recur.row_map(torch.randn(1, 20, 128).bfloat16(), list(m.parameters()), self.k, "rglru", None)
        self.assertIn("give initial_state", str(e.exception))
        self.assertEqual(self.calls, [])

    def test_the_leanest_variant_still_runs_without_the_map(self):
        name, _ = self.k.choose("rglru", 1, 37, 128, H200, "", frozenset(("h0",)))
        self.assertNotIn("map_loga", self.k.manifest.variants[name].state)

    def test_a_folder_without_map_variants_says_how(self):
        with self.assertRaises(ValueError) as e:
            kernels().choose("rglru", 1, 37, 128, H200, "", frozenset(("h0", "map_loga", "map_h")))
        self.assertIn("map = { true }", str(e.exception))


class CarriedStates(_StateFolder):
    """initial_state= and output_final_state= through the operators to C: a
    variant taking states runs; the forward gets h0 and hT, the backward h0,
    dhT (the final state's gradient) and dh0, which autograd hands to
    initial_state.grad; wrong states raise; a folder without them says how."""

    def test_h0_in_hT_out_and_their_gradients(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16().requires_grad_(True)
        h0 = torch.randn(2, 128).requires_grad_(True)
        y, hT = m(x, initial_state=h0, output_final_state=True)
        self.assertEqual((hT.shape, hT.dtype), (torch.Size([2, 128]), torch.float32))
        self.assertTrue(bool((hT == 7.0).all()))
        (y.float().sum() + 2 * hT.sum()).backward()
        fwd, bwd = self.calls
        self.assertIn("h0", self.k.manifest.variants[fwd[1]].state)
        self.assertEqual(fwd[5][:2], (h0.data_ptr(), hT.data_ptr()))
        self.assertEqual(fwd[5][2:], (0, 0))
        self.assertEqual(bwd[4][0], h0.data_ptr())
        self.assertNotEqual(bwd[4][2], 0)      # dhT: the 2s of the loss
        self.assertTrue(bool((h0.grad == 3.0).all()))
        report("initial_state and output_final_state through", fwd[1])

    def test_final_state_without_h0(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(1, 20, 128).bfloat16().requires_grad_(True)
        y, hT = m(x, output_final_state=True)
        hT.sum().backward()
        fwd, bwd = self.calls
        self.assertEqual((fwd[5][0], bwd[4][0], bwd[4][3]), (0, 0, 0))   # no h0, so no dh0
        self.assertNotEqual(fwd[5][1], 0)
        self.assertEqual(x.grad.float().abs().max().item(), 0.0)        # y unused: its gradient zeros

    def test_an_unused_final_state_gives_no_gradient_buffer(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(1, 20, 128).bfloat16().requires_grad_(True)
        y, hT = m(x, output_final_state=True)
        y.float().sum().backward()
        self.assertEqual(self.calls[1][4][2], 0)    # dhT absent (the kernels read 0), not a tensor of zeros

    def test_wrong_states_are_refused(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(2, 37, 128).bfloat16()
        for h0, err in ((torch.zeros(2, 127), ValueError), (torch.zeros(2, 128, dtype=torch.float64), TypeError),
                        (torch.zeros(128, 2).t(), ValueError), ([0.0] * 256, TypeError)):
            with self.assertRaises(err) as e:
                m(x, initial_state=h0)
            self.assertIn("initial_state", str(e.exception))
        self.assertEqual(self.calls, [])

    def test_a_folder_without_them_says_how(self):
        with self.assertRaises(ValueError) as e:
            kernels().choose("rglru", 2, 37, 128, H200, "", frozenset(("h0",)))
        self.assertIn("state.lua", str(e.exception))


class TransformersRecurrentGemma(_StateFolder):
    """recur.apply_to_recurrentgemma on a model holding transformers'
    RecurrentGemmaRglru (ref_torch's, the same names and attributes): the
    same parameter objects under the same names, and each call's path to C
    through the stand-in -- the parameters in recur's order, gradients back
    to transformers' names, documents as reset marks, a row continuing from
    recurrent_states, a prompt's final state kept, one token on the decode
    step. Its numbers against transformers' forward: gpu_torch_test.py."""

    def model(self, dtype=torch.float32):
        m = torch.nn.Module()
        m.layers = torch.nn.ModuleList([torch.nn.Module(), torch.nn.Module()])
        m.layers[1].temporal_block = torch.nn.Module()
        m.layers[1].temporal_block.rg_lru = ref_torch.RecurrentGemmaRglru(128, 2, dtype=dtype)
        return m

    def test_the_model_keeps_its_parameters(self):
        m = self.model()
        before = dict(m.named_parameters())
        self.assertEqual(recur.apply_to_recurrentgemma(m, self.k), 1)
        layer = m.layers[1].temporal_block.rg_lru
        self.assertIsInstance(layer, recur.RecurrentGemmaRglru)
        after = dict(m.named_parameters())
        self.assertEqual(list(before), list(after))
        self.assertTrue(all(before[n] is after[n] for n in before))
        report(layer)
        with self.assertRaises(ValueError) as e:
            recur.apply_to_recurrentgemma(m, self.k)     # nothing left to replace
        self.assertIn("no transformers RecurrentGemmaRglru", str(e.exception))
        odd = self.model()
        del odd.layers[1].temporal_block.rg_lru.recurrent_param   # not transformers' layer after all
        with self.assertRaises(ValueError) as e:
            recur.apply_to_recurrentgemma(odd, self.k)
        self.assertIn("RecurrentGemmaRglru has no recurrent_param", str(e.exception))
        with self.assertRaises(ValueError) as e:      # RecurrentGemma 2B's heads into a folder of heads of 64
            recur.apply_to_recurrentgemma(_wide_heads_model(), self.k)
        report(str(e.exception))
        self.assertIn("10 heads of 256 channels (width 2560)", str(e.exception))

    def test_training_the_parameters_in_order_and_their_gradients(self):
        for dtype in (torch.float32, torch.bfloat16):
            self.calls.clear()
            m = self.model(dtype)
            recur.apply_to_recurrentgemma(m, self.k)
            layer = m.layers[1].temporal_block.rg_lru
            x = torch.randn(2, 37, 128, dtype=dtype).requires_grad_(True)
            y = layer(x, torch.arange(37).repeat(2, 1))
            self.assertEqual(y.dtype, dtype)
            y.float().sum().backward()
            fwd, bwd = self.calls
            if dtype == torch.float32:   # float32 weights go as they are: the addresses are theirs
                self.assertEqual(fwd[3], [layer.recurrent_gate_weight.data_ptr(), layer.recurrent_gate_bias.data_ptr(),
                                          layer.input_gate_weight.data_ptr(), layer.input_gate_bias.data_ptr(),
                                          layer.recurrent_param.data_ptr()])
            self.assertIsNone(fwd[4])                       # no start after t = 0: no marks
            self.assertEqual(fwd[5][:2], (0, 0))            # no state in or out
            # the stand-in's gradients are each parameter's number in recur's order
            got = [layer.recurrent_gate_weight.grad, layer.recurrent_gate_bias.grad, layer.input_gate_weight.grad,
                   layer.input_gate_bias.grad, layer.recurrent_param.grad]
            for i, g in enumerate(got):
                self.assertEqual(g.dtype, dtype)
                self.assertTrue(bool((g == i + 1.0).all()), (dtype, i))
            self.assertEqual(layer.recurrent_states, None)

    def test_documents_and_continuing_rows(self):
        m = self.model()
        recur.apply_to_recurrentgemma(m, self.k)
        layer = m.layers[1].temporal_block.rg_lru
        x = torch.randn(2, 128, 37).bfloat16().transpose(1, 2)   # as the recurrent block hands it over
        self.assertFalse(x.is_contiguous())
        pos = torch.arange(37).repeat(2, 1)
        pos[1, 20:] -= 20                                   # row 1: a second document from t = 20
        layer(x, pos)
        self.assertIsNotNone(self.calls[-1][4])             # marks
        self.assertEqual(self.calls[-1][5][0], 0)           # every row starts at t = 0: no h0
        layer(x, pos + 5)                                   # row 0 continues (from zeros: no cache)
        self.assertNotEqual(self.calls[-1][5][0], 0)
        self.assertIsNotNone(self.calls[-1][4])             # row 1's start at t = 15
        cache = layer.recurrent_states = torch.full((2, 128), 0.5)
        layer(x, pos + 100)                                 # a cache: the rows continue from it, keep hT
        st = self.calls[-1][5]
        self.assertEqual(st[0], cache.data_ptr())
        self.assertNotEqual(st[1], 0)
        self.assertTrue(bool((layer.recurrent_states == 7.0).all()))   # the stand-in's hT

    def test_a_prompt_then_tokens(self):
        m = self.model()
        recur.apply_to_recurrentgemma(m, self.k)
        layer = m.layers[1].temporal_block.rg_lru
        layer.recurrent_states = torch.zeros(2, 128)        # as transformers' generate sets it up
        layer(torch.randn(2, 30, 128).bfloat16(), torch.arange(30).repeat(2, 1))
        name, st = self.calls[-1][1], self.calls[-1][5]
        self.assertNotIn("decode", name)
        self.assertEqual(st[0], 0)                          # the prompt starts the rows: no h0
        state = layer.recurrent_states
        self.assertTrue(bool((state == 7.0).all()))
        y = layer(torch.randn(2, 1, 128).bfloat16(), torch.tensor([[30], [30]]))
        name, st = self.calls[-1][1], self.calls[-1][5]
        self.assertEqual(name, "rglru_decode_mma")
        self.assertEqual(st[:2], (state.data_ptr(), state.data_ptr()))   # in place
        self.assertIs(layer.recurrent_states, state)
        self.assertEqual(tuple(y.shape), (2, 1, 128))
        n = len(self.calls)
        layer(torch.randn(2, 1, 128).bfloat16(), torch.tensor([[0], [31]]))   # row 0 starts anew
        self.assertEqual(len(self.calls), n + 2)
        self.assertEqual([c[5][0] for c in self.calls[n:]], [0, state.data_ptr()])   # start, then continue
        self.assertTrue(all(self.indexes[n:]))              # each with its rows' index (the other's -1)


class TransformersRecurrentGemmaMath(unittest.TestCase):
    """recur.RecurrentGemmaRglru's calls with the kernels replaced by recur's
    float64 reference (ref_torch.rglru: recur.mix and recur.decode_step as
    their math), against transformers' forward (ref_torch.hf_rglru) on the
    same parameters: what the adapter hands the kernels -- parameters in
    order, biases flattened, marks from position_ids, a row continuing from
    zeros or from recurrent_states, a prompt's final state, tokens on the
    decode step with some rows starting anew -- is transformers' layer."""

    def setUp(self):
        k = kernels()

        def mix(x, params, kernels, mixer, variant=None, resets=None, initial_state=None,
                output_final_state=False):
            self.assertEqual(mixer, "rglru")
            self.assertEqual(x.dtype, torch.bfloat16)
            self.assertTrue(x.is_contiguous())    # the operators refuse another layout
            y = ref_torch.rglru(x.double(), *(p.double() for p in params), resets=resets,
                                h0=None if initial_state is None else initial_state.double())
            return (y, y[:, -1].float()) if output_final_state else y

        def decode_step(x, params, state, kernels, mixer, index=None, start=False, variant=None):
            self.assertTrue(x.is_contiguous() and state.is_contiguous() and state.dtype == torch.float32)
            rows = torch.arange(x.shape[0]) if index is None else index.long()
            y = torch.zeros(x.shape, dtype=torch.float64)
            for b in rows[rows >= 0].tolist():
                h0 = None if start else state[b:b + 1].double()
                y[b:b + 1] = ref_torch.rglru(x[b:b + 1].double(), *(p.double() for p in params), h0=h0)
                state[b] = y[b, -1].float()
            return y

        self.k = k
        for name, fn in (("mix", mix), ("decode_step", decode_step)):
            p = mock.patch.object(recur.recurrentgemma.ops, name, fn)
            p.start()
            self.addCleanup(p.stop)

    def pair(self, D=128, H=2, dtype=torch.float32):
        """transformers' layer and a copy of it on recur's adapter (its own parameters)."""
        hf = ref_torch.RecurrentGemmaRglru(D, H, seed=int.from_bytes(os.urandom(2), "little"), dtype=dtype)
        m = torch.nn.Module()
        m.rg_lru = ref_torch.RecurrentGemmaRglru(D, H, dtype=dtype)
        m.rg_lru.load_state_dict(hf.state_dict())
        recur.apply_to_recurrentgemma(m, self.k)
        return hf, m.rg_lru

    def close(self, a, b, what, tol=1e-12):
        err = (a.double() - b.double()).abs().max().item()
        self.assertLess(err, tol, what)
        return err

    def test_training_documents_and_gradients(self):
        hf, ours = self.pair()
        x = torch.randn(2, 128, 37).bfloat16().transpose(1, 2)   # as the recurrent block hands it over
        pos = torch.arange(37).repeat(2, 1)
        pos[1, 20:] -= 20     # a second document
        pos[0] += 3           # row 0 continues: from zeros, as transformers' scan without a cache
        dy = torch.randn(2, 37, 128).bfloat16().double()   # the bf16 y's gradient is then dy itself
        outs = []
        for layer in (hf, ours):
            xx = x.double().requires_grad_(True) if layer is hf else x.clone().requires_grad_(True)
            y = layer(xx, pos)
            (y.double() * dy).sum().backward()
            outs.append((y, xx.grad, {n: p.grad for n, p in layer.named_parameters()}))
        (yh, gxh, gh), (yo, gxo, go) = outs
        self.assertEqual(yo.dtype, torch.bfloat16)   # the activations' dtype
        self.close(yo, yh.bfloat16(), "y")
        self.assertLess(ref_torch.rel_l2(gxo, gxh), 2 ** -8)   # x's gradient in bf16, as x
        for n in gh:   # float32 parameters: their gradients in float32
            err = ref_torch.rel_l2(go[n], gh[n])
            report("d%s: relative %.1e" % (n, err))
            self.assertLess(err, 1e-6, n)

    def test_a_prompt_then_tokens(self):
        hf, ours = self.pair()
        for layer in (hf, ours):
            layer.recurrent_states = torch.zeros(3, 128)
        prompt = torch.randn(3, 30, 128).bfloat16()
        pos = torch.arange(30).repeat(3, 1)
        ys = [layer(prompt, pos) for layer in (hf, ours)]
        self.close(ys[1], ys[0].bfloat16(), "the prompt's y")
        self.close(ours.recurrent_states, hf.recurrent_states, "the prompt's final state", 1e-6)
        for t, starts in ((30, (30, 30, 30)), (31, (0, 31, 31)), (32, (0, 0, 0))):   # row 0 starts anew at 31
            tok = torch.randn(3, 1, 128).bfloat16()
            p = torch.tensor(starts)[:, None] + (t - 30) * 0
            ys = [layer(tok, p) for layer in (hf, ours)]
            self.close(ys[1], ys[0].bfloat16(), "token %d" % t, 1e-2)
            self.close(ours.recurrent_states, hf.recurrent_states, "the state after token %d" % t, 1e-5)


def _wide_heads_model():
    """A model whose RG-LRU has 10 heads of 256 (RecurrentGemma 2B's)."""
    m = torch.nn.Module()
    m.rg_lru = ref_torch.RecurrentGemmaRglru(2560, 10)
    return m


class DecodeStep(_StateFolder):
    """The decode step through recur.decode_step / Mixer.step to C: the
    folder's decode variant runs (never chosen for a forward over a whole
    sequence), h0 and hT both point at the pool (in place; h0 null with
    start=True), the slot index goes as int32, and wrong pools or indexes
    raise before any call."""

    def test_the_decode_variant_apart(self):
        self.assertNotIn("rglru_decode", self.k.variants("rglru"))
        self.assertNotIn("rglru_decode_mma", self.k.variants("rglru"))
        # the tensor-core step first, though the folder lists the fp32 one before it
        self.assertEqual(self.k.decode_variant("rglru"), "rglru_decode_mma")
        with self.assertRaises(ValueError) as e:
            kernels().decode_variant("rglru")
        self.assertIn("decode.lua", str(e.exception))
        recur.RGLRU(self.k, 128)(torch.randn(1, 20, 128).bfloat16())
        self.assertNotEqual(self.calls[0][1], "rglru_decode")

    def test_in_place_with_an_index(self):
        m = recur.RGLRU(self.k, 128)
        state = m.new_state(5)
        x = torch.randn(2, 1, 128).bfloat16()
        idx = torch.tensor([3, 1], dtype=torch.int32)
        y = m.step(x, state, index=idx)
        m.step(x, state, start=True)
        (_, name, _, _, _, st), (_, _, _, _, _, st2) = self.calls
        self.assertEqual(name, "rglru_decode_mma")
        self.assertEqual(st[:2], (state.data_ptr(), state.data_ptr()))   # h0 = hT: in place
        self.assertEqual(st2[:2], (0, state.data_ptr()))                  # start: no h0
        self.assertEqual(self.indexes, [idx.data_ptr(), 0])                 # int32 goes as it is
        self.assertTrue(torch.equal(y, x))
        report("decode step in place through", "custom_op" if recur.HAS_CUSTOM_OP else "a plain call")

    def test_one_kernel_a_row_where_the_width_fits(self):
        # SAMU's folder lists the two-launch step first; a call of one token runs rows = true where
        # its rules take the width (to 8192), the two-launch step beyond, and a call of more tokens
        # the folder's first (the row kernel walks their sums one after another)
        state = torch.zeros(2, 128)
        m = recur.SAMU(self.k, 128)
        m.step(torch.randn(2, 1, 128).bfloat16(), state)
        wide = recur.SAMU(self.k, 8256)
        wide.step(torch.randn(2, 1, 8256).bfloat16(), wide.new_state(2))
        m.step(torch.randn(2, 4, 128).bfloat16(), state)
        self.assertEqual([c[1] for c in self.calls], ["samu_decode_rows", "samu_decode", "samu_decode"])
        self.assertTrue(self.k.manifest.variants["samu_decode_rows"].rows)

    def test_a_decode_step_pinned(self):
        m = recur.RGLRU(self.k, 128)
        x, state = torch.randn(2, 1, 128).bfloat16(), m.new_state(2)
        m.step(x, state, variant="rglru_decode")
        self.assertEqual(self.calls[-1][1], "rglru_decode")
        for pin in ("rglru_nope", "fused_grouped_prefix32_hierarchical_chunk8"):
            with self.assertRaises(ValueError) as e:
                m.step(x, state, variant=pin)
            self.assertIn("rglru_decode, rglru_decode_mma", str(e.exception))
        self.assertEqual(len(self.calls), 1)

    def test_wrong_pools_and_indexes_are_refused(self):
        m = recur.RGLRU(self.k, 128)
        x = torch.randn(3, 1, 128).bfloat16()
        for state, index, err, word in ((m.new_state(2), None, ValueError, "slot b"),
                                        (torch.zeros(3, 128, dtype=torch.float64), None, TypeError, "state"),
                                        (torch.zeros(3, 127), None, ValueError, "state"),
                                        (m.new_state(4), torch.zeros(2, dtype=torch.int32), ValueError, "index"),
                                        (m.new_state(4), torch.zeros(3), TypeError, "index")):
            with self.assertRaises(err) as e:
                m.step(x, state, index=index)
            self.assertIn(word, str(e.exception))
        self.assertEqual(self.calls, [])


class Gpu(unittest.TestCase):
    def test_gpu(self):
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device visible to torch: the GPU checks are tests/python/gpu_torch_test.py")
        k = kernels()
        x = torch.randn(2, 37, 128, device="cuda").bfloat16()
        m = recur.RGLRU(k, 128).cuda()
        try:
            y = m(x)
        except recur.RecurError as e:
            self.skipTest("the runtime cannot run here: %s" % e)
        self.assertEqual(y.shape, x.shape)


if __name__ == "__main__":
    unittest.main(verbosity=2)
