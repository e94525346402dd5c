#!/usr/bin/env python3
"""Where a kernel's issue slots go, from Nsight Compute's source counters.

Reads the CSV that `bench/h200_suite.sh sass` writes (every SASS instruction
of each profiled kernel with its executed count and stall samples) and prints,
per kernel, the executed warp instructions per element by class of opcode,
and the stall reasons sampled. Per element: over B*L*D of the profiled shape.

With --loops, each innermost loop (a backward branch whose range holds no
other) with the instructions its range executes per trip of the branch: the
SASS counterpart of bench/ptx_loops.sh.

With --ptx, no GPU: the module is compiled here (ptxas, or $PTXAS) and
disassembled (nvdisasm, or $NVDISASM), and each instruction counts once, so
the report is the kernel's static code by class and, with --loops, each
innermost loop's instructions per trip as written (a branch inside a loop's
range counts both ways). Dynamic counts, stalls and what the driver's own
compiler makes of the PTX need the GPU's CSV.

    usage: bench/sass_mix.py sass_rglru.csv[.xz] [--elements N] [--top K] [--loops]
           bench/sass_mix.py --ptx FILE.ptx [--sm sm_90a] [--kernel NAME] [--loops]
"""
import argparse
import collections
import csv
import io
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

# opcode (its first dot-separated part) -> class; what is not named is "other"
CLASSES = {
    "fp32": "FFMA FMUL FADD FMNMX FSEL FSETP FCHK FSWZADD",
    "fp16x2": "HADD2 HFMA2 HMUL2 HMNMX2 HSETP2",
    "sfu (MUFU)": "MUFU",
    "tensor (HMMA)": "HMMA HGMMA",
    "shared ld/st": "LDS STS LDSM",
    "global ld/st": "LDG STG LD ST RED ATOM ATOMG ATOMS",
    "integer/logic": "IMAD IADD3 IADD VIADD VIMNMX LOP3 SHF SHL SHR ISETP IMNMX LEA SEL IABS POPC FLO BMSK",
    "convert/pack": "F2F F2FP I2F F2I PRMT I2FP F2IP",
    "move": "MOV UMOV MOV32I S2R S2UR CS2R R2UR SHFL LDC",
    "uniform": "ULDC UIADD3 UIMAD ULOP3 USHF USEL UISETP ULEA UPRMT UFLO UPOPC",
    "control": "BRA BSSY BSYNC EXIT WARPSYNC BAR NOP CALL RET YIELD VOTE VOTEU BPT ELECT PLOP3 P2R R2P MEMBAR FENCE ERRBAR CCTL",
}
OPCLASS = {op: c for c, ops in CLASSES.items() for op in ops.split()}


def opcode(src):
    s = src.strip()
    if s.startswith("@"):              # predicate guard
        s = s.split(None, 1)[1] if " " in s else ""
    return s.split(None, 1)[0].split(".")[0] if s else "?"


def kernels(path):
    raw = lzma.open(path, "rt") if path.endswith(".xz") else open(path, newline="")
    name, hdr, rows = None, None, []
    for rec in csv.reader(raw):
        if not rec:
            continue
        if rec[0] == "Kernel Name":
            if name is not None:
                yield name, hdr, rows
            name, hdr, rows = rec[1], None, []
        elif hdr is None:
            hdr = rec
        else:
            rows.append(rec)
    if name is not None:
        yield name, hdr, rows


def num(v):
    try:
        return float(v)
    except ValueError:
        return 0.0


def one(x):
    """a count per trip: whole where it is, else to one decimal"""
    return f"{round(x, 1):g}"


def innermost(rows, cs, ca):
    """(first, last) row of each innermost loop: a backward branch whose range holds no other"""
    addr = [int(r[ca], 16) for r in rows]
    pos = {x: k for k, x in enumerate(addr)}
    back = []
    for k, r in enumerate(rows):
        src = r[cs].strip()
        if " BRA " not in f" {src} " or "BRA.DIV" in src:
            continue
        try:
            tgt = int(src.split()[-1], 16)
        except ValueError:
            continue
        if tgt < addr[k] and tgt in pos:
            back.append((pos[tgt], k))
    return [(f, l) for f, l in back if not any(f <= f2 and l2 <= l and (f2, l2) != (f, l) for f2, l2 in back)]


def loops(rows, ci, cs, ca, elements, top):
    for f, l in sorted(innermost(rows, cs, ca)):
        trips = num(rows[l][ci])
        if trips == 0:
            continue
        ops = collections.Counter()
        for r in rows[f:l + 1]:
            ops[opcode(r[cs])] += num(r[ci])
        n = sum(ops.values())
        cls = collections.Counter()
        for op, v in ops.items():
            cls[OPCLASS.get(op, "other")] += v
        print(f"   loop {rows[f][ca][-5:]}..{rows[l][ca][-5:]}: {l - f + 1} instr, {trips:.0f} trips, "
              f"{one(n / trips)} per trip, {n / elements:.3f} /el; " +
              ", ".join(f"{c} {one(v / trips)}" for c, v in cls.most_common(6)))
        print("      " + ", ".join(f"{op} {one(v / trips)}" for op, v in ops.most_common(top)))


def legacy_header(cubin):
    """The cubin's ELF header in the layout disassemblers before CUDA 12.8 read.

    ptxas 12.8 and later write OS/ABI 0x41, ABI version 8 and the SM in bits
    8-15 of e_flags; older ones read OS/ABI 0x33, version 7, the SM in bits
    0-7 and 16-23. The instructions' encoding of a target is the same, so an
    older nvdisasm (Debian's non-free nvidia-cuda-toolkit) reads the text.
    """
    b = bytearray(cubin)
    if b[:4] != b"\x7fELF" or b[7] != 0x41:
        return None
    sm = (struct.unpack_from("<I", b, 0x30)[0] >> 8) & 0xFF
    b[7], b[8] = 0x33, 7
    struct.pack_into("<I", b, 0x30, sm | 0x500 | sm << 16)
    return bytes(b)


def tool(env, name):
    """NAME's path: $ENV where set, else on the PATH, else CUDA's usual place"""
    path = os.environ.get(env) or shutil.which(name) or f"/usr/local/cuda/bin/{name}"
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        sys.exit(f"sass_mix.py: {name} not found ({path}): put it on the PATH or name it in ${env}")
    return path


def disassemble(ptx, sm):
    """nvdisasm's text of the module ptxas makes of PTX for SM"""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        r = subprocess.run([tool("PTXAS", "ptxas"), f"-arch={sm}", ptx, "-o", cubin], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"sass_mix.py: ptxas -arch={sm} {ptx} failed:\n{r.stderr.strip()}")
        nvdisasm = tool("NVDISASM", "nvdisasm")
        r = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True)
        if r.returncode and "architecture information" in r.stderr:
            with open(cubin, "rb") as f:
                old = legacy_header(f.read())
            if old is not None:
                with open(cubin, "wb") as f:
                    f.write(old)
                r = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"sass_mix.py: {nvdisasm} -c (the cubin of {ptx} for {sm}) failed:\n{r.stderr.strip()}")
        return r.stdout


INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*$")
LABEL = re.compile(r"^(\.L_x_\d+):")
TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def static_kernels(text):
    """(kernel, rows) from nvdisasm's text, each row [address, source] with a
    branch's label target written as the address, as Nsight Compute writes it"""
    name, rows, labels = None, [], {}
    out = []
    for line in text.splitlines():
        m = re.match(r"^\.text\.(\S+):", line)
        if m:
            name, rows, labels = m.group(1), [], {}
            out.append((name, rows, labels))
            continue
        if name is None:
            continue
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = None            # bound to the next instruction's address
            continue
        m = INSTR.match(line)
        if m:
            a = int(m.group(1), 16)
            for k, v in labels.items():
                if v is None:
                    labels[k] = a
            rows.append([f"{a:#012x}", m.group(2)])
    result = []
    for name, rows, labels in out:
        for r in rows:
            r[1] = TARGET.sub(lambda m: f"{labels[m.group(1)]:#x}" if labels.get(m.group(1)) is not None
                              else m.group(0), r[1])
        result.append((name, rows))
    return result


def static_report(ptx, sm, kernel, want_loops, top):
    found = False
    for name, rows in static_kernels(disassemble(ptx, sm)):
        if kernel and name != kernel:
            continue
        found = True
        ops = collections.Counter(opcode(r[1]) for r in rows)
        cls = collections.Counter()
        for op, v in ops.items():
            cls[OPCLASS.get(op, "other")] += v
        print(f"== {name} ({sm}): {len(rows)} instructions (static)")
        print("   " + ", ".join(f"{c} {v}" for c, v in cls.most_common()))
        if not want_loops:
            continue
        for f, l in sorted(innermost(rows, 1, 0)):
            lops = collections.Counter(opcode(r[1]) for r in rows[f:l + 1])
            lcls = collections.Counter()
            for op, v in lops.items():
                lcls[OPCLASS.get(op, "other")] += v
            print(f"   loop {rows[f][0][-5:]}..{rows[l][0][-5:]}: {l - f + 1} instr a trip; " +
                  ", ".join(f"{c} {v}" for c, v in lcls.most_common(6)))
            print("      " + ", ".join(f"{op} {v}" for op, v in lops.most_common(top)))
    if not found:
        sys.exit(f"sass_mix.py: no kernel {kernel} in {ptx}" if kernel else f"sass_mix.py: no kernel in {ptx}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="?", help="Nsight Compute's source counters (bench/h200_suite.sh sass)")
    ap.add_argument("--ptx", help="static mode: compile and disassemble this module here")
    ap.add_argument("--sm", default="sm_90a", help="static mode's target (sm_90a)")
    ap.add_argument("--kernel", help="static mode: this kernel only")
    ap.add_argument("--elements", type=float, default=1 * 32768 * 1024, help="B*L*D of the profiled shape")
    ap.add_argument("--top", type=int, default=12, help="opcodes listed per kernel")
    ap.add_argument("--loops", action="store_true", help="per trip of each innermost loop")
    a = ap.parse_args()
    if a.ptx:
        static_report(a.ptx, a.sm, a.kernel, a.loops, a.top)
        return
    if not a.csv:
        ap.error("name a CSV of source counters, or --ptx FILE.ptx")
    seen = set()
    for name, hdr, rows in kernels(a.csv):
        if name in seen:                # the profile may hold a second launch of a kernel
            continue
        seen.add(name)
        try:
            ci, cs = hdr.index("Instructions Executed"), hdr.index("Source")
        except (ValueError, AttributeError):
            sys.exit(f"{a.csv}: kernel {name}: no 'Instructions Executed' / 'Source' columns")
        stalls = [(i, h) for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
        by_class, by_op, st = collections.Counter(), collections.Counter(), collections.Counter()
        for r in rows:
            n = num(r[ci])
            op = opcode(r[cs])
            by_op[op] += n
            by_class[OPCLASS.get(op, "other")] += n
            for i, h in stalls:
                st[h[6:]] += num(r[i])
        tot = sum(by_class.values())
        if tot == 0:
            continue
        e = a.elements
        print(f"== {name}: {tot / 1e6:.2f} M warp instructions, {tot / e:.3f} per element "
              f"({32 * tot / e:.1f} thread instructions)")
        for c, n in by_class.most_common():
            print(f"   {c:<16} {n / e:7.3f} /el  {100 * n / tot:5.1f}%")
        print("   top opcodes: " + ", ".join(f"{op} {n / e:.3f}" for op, n in by_op.most_common(a.top)))
        if a.loops:
            loops(rows, ci, cs, hdr.index("Address"), e, a.top)
        sn = sum(st.values())
        if sn:
            print("   stall samples: " + ", ".join(f"{k} {100 * v / sn:.0f}%" for k, v in st.most_common(8) if v))


if __name__ == "__main__":
    main()
