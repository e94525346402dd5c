#!/usr/bin/env bash
# The suite's gen cache ($RECUR_GEN_CACHE, recur gen --cache) from one run
# to the next. Its keys cover a kernel's IR (all the scripts, the Lua
# library and the templates put into it), LLVM's and the generator's
# versions, the target and the PTX ISA, not the code that turns IR into
# PTX and files: gen/ (keys, the join, the cache itself), ir/target.* (the
# pipeline and the target machine), util/hash.* and util/fsutil.*. So the
# cache is kept while those sources are byte for byte what they were when
# it was filled, and emptied when any differs (or when it passes
# $GEN_CACHE_MAX_KIB, default 1 GiB):
# after an edit to a template the suite rebuilds the kernels that template
# makes, not every module.
#   usage: gen_cache_fixture.sh CACHE_DIR SOURCE_DIR
set -eu
dir=$1 src=$2
stamp=$(cd "$src" && cat gen/*.c gen/*.h ir/target.c ir/target.h util/hash.c util/hash.h util/fsutil.c \
	util/fsutil.h | sha256sum | cut -c1-64)
kb=$(du -sk "$dir" 2> /dev/null | cut -f1)
was=$(cat "$dir/stamp" 2> /dev/null || true)
if [ "$was" = "$stamp" ] && [ "${kb:-0}" -le "${GEN_CACHE_MAX_KIB:-1048576}" ]; then
	echo "gen cache $dir kept (${kb:-0} KiB): the sources from IR to PTX are those that filled it"
	exit 0
fi
if [ -z "$was" ]; then
	why="new"
elif [ "$was" != "$stamp" ]; then
	why="the sources from IR to PTX changed"
else
	why="over ${GEN_CACHE_MAX_KIB:-1048576} KiB"
fi
rm -rf "$dir"
mkdir -p "$dir"
echo "$stamp" > "$dir/stamp"
echo "gen cache $dir emptied: $why"
