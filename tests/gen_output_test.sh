#!/usr/bin/env bash
# recur gen replaces its output folder whole and deletes nothing it did not
# write: a folder holding anything else, a link, a file, an interrupted or
# failed run each leave what was there, and no temporary folder behind.
#   usage: gen_output_test.sh RECUR_BINARY SOURCE_DIR WORK_DIR
set -u
recur=$1 src=$2 work=$3
unset RECUR_GEN_CACHE   # the generations here are interrupted mid-build: each must really build
rm -rf "$work"; mkdir -p "$work"
pass=0 fail=0
. "$src/tests/check_lib.sh"
leftovers() { ls -d "$work"/*.tmp.* "$work"/*.old.* 2>/dev/null | wc -l; }
cat > "$work/one.lua" <<'LUA'
local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true },
  rules = { { "D % 64 == 0", "heads of 64" } } }
LUA
cat > "$work/four.lua" <<'LUA'
local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8, 16, 32, 64 }, prefix = { 32 }, fused = { true },
  rules = { { "D % 64 == 0", "heads of 64" } } }
LUA
gen() { "$recur" gen "$1" --lua "$src/lua" -o "$2" -q -j 1 2>&1; }

gen "$work/one.lua" "$work/out" >/dev/null; check $? "gen into a new folder"
sum=$(cat "$work/out"/* | cksum)
gen "$work/one.lua" "$work/out" >/dev/null; check $? "gen again replaces its own output"
[ "$(cat "$work/out"/* | cksum)" = "$sum" ] && [ "$(ls "$work/out" | wc -l)" = 2 ]; check $? "the same two files after the second run"

mkdir -p "$work/sub/keep"; echo data > "$work/sub/keep/f"; echo mine > "$work/sub/a.ptx"
msg=$(gen "$work/one.lua" "$work/sub"); rc=$?
[ $rc -ne 0 ] && echo "$msg" | grep -q "holds keep, which recur gen did not write"; check $? "a folder with a subfolder is refused ($msg)"
[ -f "$work/sub/keep/f" ] && [ -f "$work/sub/a.ptx" ]; check $? "its files are all still there"

mkdir -p "$work/notes"; echo x > "$work/notes/notes.txt"
msg=$(gen "$work/one.lua" "$work/notes"); rc=$?
[ $rc -ne 0 ] && [ -f "$work/notes/notes.txt" ]; check $? "a folder with a file gen does not write is refused and kept ($msg)"

mkdir -p "$work/target"; cp "$work/out"/* "$work/target/"; ln -s target "$work/link"
msg=$(gen "$work/one.lua" "$work/link"); rc=$?
[ $rc -ne 0 ] && echo "$msg" | grep -q "symbolic link" && [ "$(ls "$work/target" | wc -l)" = 2 ] && [ -L "$work/link" ]
check $? "-o LINK is refused, the link and its target's files kept ($msg)"

echo text > "$work/afile"
msg=$(gen "$work/one.lua" "$work/afile"); rc=$?
[ $rc -ne 0 ] && [ "$(cat "$work/afile")" = text ]; check $? "-o FILE is refused and the file kept ($msg)"

printf 'return 1 +\n' > "$work/broken.lua"
msg=$(gen "$work/broken.lua" "$work/out"); rc=$?
[ $rc -ne 0 ] && [ "$(cat "$work/out"/* | cksum)" = "$sum" ]; check $? "a script error leaves the old output ($msg)"

# interrupted while building (SIGTERM: a background job of a script ignores
# SIGINT): the old output stays, nothing else appears
"$recur" gen "$work/four.lua" --lua "$src/lua" -o "$work/out" -q -j 1 >/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid 2>/dev/null
wait $pid; rc=$?
[ $rc -ne 0 ] && [ "$(cat "$work/out"/* | cksum)" = "$sum" ]; check $? "SIGTERM while building leaves the old output (exit $rc)"
[ "$(leftovers)" = 0 ]; check $? "no temporary or old folder left behind ($(ls "$work" | tr '\n' ' '))"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
