-- RG-LRU with heads of K channels (APART_K, default 256), the projections
-- apart, in the variants whose steps carry marks: packed documents (their
-- codes and states), and reset marks with the sequence states; the
-- look-back and one-pass scans at chunk 8. No shipped grid has them;
-- tests/gen_apart_test.sh holds them to ptxas without spills, and
-- bench/h200_suite.sh heads verifies them where the set apartmarks is
-- carried.
local R = require "recur"

local m = require "arch.rglru_heads" (tonumber(os.getenv("APART_K") or "256"))
return {
  R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, apart = { true }, scan = { "lookback", "onepass" },
               docs = { true } },
  R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, apart = { true }, scan = { "lookback", "onepass" },
               resets = { true }, states = { true } },
}
