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

# folders a run killed outright (SIGKILL, the OOM killer: no handler runs)
# leaves beside its output: the next run removes those of a process that is
# gone, untouched for an hour and holding only what gen writes, and says so;
# it keeps the rest whole. No process has an id above pid_max.
dead=$(( $(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304) + 1 ))
staged() {   # NAME AGE [foreign]: a staging-like folder of gen's two files, AGE as touch -d takes it
	mkdir -p "$work/$1"; cp "$work/out"/* "$work/$1/"
	[ -z "${3:-}" ] || echo notes > "$work/$1/notes.txt"
	touch -d "$2" "$work/$1"
}
staged out.tmp.$dead "2 hours ago"
staged out.old.$((dead + 1)) "2 hours ago"
staged out.tmp.$((dead + 2)) "2 hours ago" foreign
staged out.tmp.$((dead + 3)) "1 minute ago"
staged out.tmp.$$ "2 hours ago"
msg=$(gen "$work/one.lua" "$work/out"); rc=$?
[ $rc -eq 0 ] && [ ! -e "$work/out.tmp.$dead" ] && [ ! -e "$work/out.old.$((dead + 1))" ]
check $? "a killed run's old staging folders are removed by the next run"
echo "$msg" | grep -q "removed $work/out\.\(tmp\|old\)\.[0-9]* and 1 more like it, left by runs killed"
check $? "and it says so ($msg)"
[ "$(ls "$work/out.tmp.$((dead + 2))" | wc -l)" = 3 ] && [ -f "$work/out.tmp.$((dead + 2))/notes.txt" ]
check $? "one holding a file gen does not write is left whole"
[ -d "$work/out.tmp.$((dead + 3))" ] && [ -d "$work/out.tmp.$$" ]
check $? "one changed a minute ago, and one of a process that runs, are kept"
[ "$(cat "$work/out"/* | cksum)" = "$sum" ]; check $? "the output is the run's"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
