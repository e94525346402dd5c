#!/usr/bin/env python3
"""The tanh.approx.f32 of one kernel of a PTX module, and how many take a
product by 0.5 made a value at a time (mul.f32 by 0f3F000000): a sigmoid
0.5 + 0.5 tanh(z / 2) whose z / 2 is not already in hand.

    usage: ptx_tanh_args.py FILE.ptx KERNEL   prints "TANH HALVED_BY_MUL"
"""
import re
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
text = open(sys.argv[1]).read()
m = re.search(r"\.entry %s\((.*?)\n}" % re.escape(sys.argv[2]), text, re.S)
if not m:
    sys.exit("ptx_tanh_args.py: no kernel %s in %s" % (sys.argv[2], sys.argv[1]))
body = m.group(1)
# each register's defining line, by its destination
defs = {d.group(1): d.group(0) for d in re.finditer(r"^\s*[a-z][\w.]*\s+(%\w+),.*$", body, re.M)}
args = re.findall(r"tanh\.approx\.f32\s+%\w+,\s*(%\w+);", body)
halved = [a for a in args if re.match(r"\s*mul\S*\.f32 .*0f3F000000", defs.get(a, ""))]
print(len(args), len(halved))
