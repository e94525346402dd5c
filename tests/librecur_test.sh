#!/usr/bin/env bash
# librecur.so, the runtime as a shared library for other languages: it
# exports the C API of runtime/recur.h and nothing else, needs neither LLVM
# nor Lua, and answers through ctypes as through C (a shape's bytes in
# checked arithmetic, a missing driver or folder as a message, never a
# crash).
#   usage: librecur_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
lib=$(dirname "$recur")/librecur.so
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
[ -f "$lib" ] || { echo "SKIP: no $lib (the build found no shared libjansson or libnettle)"; exit 77; }

nm -D --defined-only "$lib" | awk '{ print $3 }' | sort -u > "$work/exports"
others=$(grep -v '^recur_' "$work/exports" | head -5)
[ -z "$others" ]; check $? "it exports recur_* only (others: ${others:-none})"
napi=$(grep -c '^recur_' "$work/exports")
missing=$(grep -oE '\brecur_[a-z0-9_]+\(' "$src/runtime/recur.h" | tr -d '(' | sort -u | comm -23 - "$work/exports")
[ -z "$missing" ]; check $? "every function recur.h declares is exported ($napi; missing: ${missing:-none})"
deps=$(ldd "$lib" 2>&1 | grep -iE 'llvm|lua' || true)
[ -z "$deps" ]; check $? "no LLVM or Lua behind it (${deps:-none})"
und=$(nm -D --undefined-only "$lib" | grep -iE 'LLVM|lua_' | head -3)
[ -z "$und" ]; check $? "and none of their symbols wanted (${und:-none})"

py=$(command -v python3 || true)
if [ -n "$py" ]; then
	out=$(RECUR_LIBCUDA="$work/no-such-libcuda.so" "$py" - "$lib" "$work" 2>&1 <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class Shape(ctypes.Structure):
    _fields_ = [("B", ctypes.c_int), ("L", ctypes.c_int), ("D", ctypes.c_int)]
err = ctypes.create_string_buffer(1024)
n = ctypes.c_size_t(0)
rc = lib.recur_tensor_bytes(Shape(3, 1000, 1024), ctypes.c_size_t(2), ctypes.byref(n), err, ctypes.c_size_t(1024))
print("bytes", rc, n.value)
rc = lib.recur_tensor_bytes(Shape(2147483647, 2147483647, 2147483647), ctypes.c_size_t(8), ctypes.byref(n), err,
                            ctypes.c_size_t(1024))
print("overflow", rc, err.value.decode())
rt = ctypes.c_void_p()
rc = lib.recur_rt_open(ctypes.byref(rt), 0, err, ctypes.c_size_t(1024))
print("rt_open", rc, err.value.decode())
m = ctypes.c_void_p()
rc = lib.recur_manifest_load((sys.argv[2] + "/nowhere").encode(), ctypes.byref(m), err, ctypes.c_size_t(1024))
print("manifest", rc, err.value.decode())
PY
)
	echo "$out" | sed 's/^/     /'
	echo "$out" | grep -q "^bytes 0 6144000$"; check $? "recur_tensor_bytes through ctypes: 3x1000x1024 bf16 is 6144000 bytes"
	echo "$out" | grep -qE "^overflow -1 .+"; check $? "an overflowing shape is a message, not a wrapped size"
	echo "$out" | grep -qE "^rt_open -1 .*libcuda"; check $? "no driver: recur_rt_open says so"
	echo "$out" | grep -qE "^manifest -1 .*nowhere"; check $? "a missing folder: recur_manifest_load names it"
else
	echo "note: no python3: the ctypes checks did not run"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
