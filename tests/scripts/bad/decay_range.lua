-- expect: R.decay(lo, hi) needs 0 < lo <= hi < 1, got 0.9, 1.5
local R = require "recur"
local m = R.mixer("bad")
local lam = m:param("lam", "channel", R.decay(0.9, 1.5)) -- here
