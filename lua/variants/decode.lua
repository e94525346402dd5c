-- The decode steps of the shipped mixers (R.decode): each a forward only,
-- which advances a pool of states in place by the call's tokens and writes
-- their y -- what sampling runs per generated token. RG-LRU's twice: its
-- projections as fp32 multiply-adds, and on tensor cores (mma = true);
-- `recur bench --step 1` times both. SAMU's twice: its token stage in a
-- kernel ahead of the step, and inside a step of one kernel a row (rows =
-- true). Not part of all.lua:
-- recur gen lua/variants/decode.lua -o out/decode.
local R = require "recur"

return {
  R.decode { mixer = require "arch.rglru" },
  R.decode { mixer = require "arch.rglru", mma = true },
  R.decode { mixer = require "arch.samu" },
  R.decode { mixer = require "arch.samu", rows = true },
}
