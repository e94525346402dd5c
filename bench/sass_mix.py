#!/usr/bin/env python3
"""Where a kernel's issue slots go, from Nsight Compute's source counters.

Reads the CSV that `bench/h200_suite.sh sass` writes (every SASS instruction
of each profiled kernel with its executed count and stall samples) and prints,
per kernel, the executed warp instructions per element by class of opcode,
and the stall reasons sampled. Per element: over B*L*D of the profiled shape.

With --loops, each innermost loop (a backward branch whose range holds no
other) with the instructions its range executes per trip of the branch: the
SASS counterpart of bench/ptx_loops.sh.

    usage: bench/sass_mix.py sass_rglru.csv[.xz] [--elements N] [--top K] [--loops]
"""
import argparse
import collections
import csv
import io
import lzma
import sys

# opcode (its first dot-separated part) -> class; what is not named is "other"
CLASSES = {
    "fp32": "FFMA FMUL FADD FMNMX FSEL FSETP FCHK FSWZADD",
    "fp16x2": "HADD2 HFMA2 HMUL2 HMNMX2 HSETP2",
    "sfu (MUFU)": "MUFU",
    "tensor (HMMA)": "HMMA",
    "shared ld/st": "LDS STS LDSM",
    "global ld/st": "LDG STG LD ST RED ATOM ATOMG ATOMS",
    "integer/logic": "IMAD IADD3 IADD VIADD VIMNMX LOP3 SHF SHL SHR ISETP IMNMX LEA SEL IABS POPC FLO BMSK",
    "convert/pack": "F2F F2FP I2F F2I PRMT I2FP F2IP",
    "move": "MOV UMOV MOV32I S2R S2UR CS2R R2UR SHFL",
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


def loops(rows, ci, cs, ca, elements, top):
    addr = [int(r[ca], 16) for r in rows]
    pos = {x: k for k, x in enumerate(addr)}
    back = []                           # (first, last) row of each backward branch's range
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
    inner = [(f, l) for f, l in back if not any(f <= f2 and l2 <= l and (f2, l2) != (f, l) for f2, l2 in back)]
    for f, l in sorted(inner):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--elements", type=float, default=1 * 32768 * 1024, help="B*L*D of the profiled shape")
    ap.add_argument("--top", type=int, default=12, help="opcodes listed per kernel")
    ap.add_argument("--loops", action="store_true", help="per trip of each innermost loop")
    a = ap.parse_args()
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
