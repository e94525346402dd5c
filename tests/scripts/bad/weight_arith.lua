-- expect: Wa is a block-diagonal weight: use it through m:project
local R = require "recur"
local m = R.mixer("bad")
local Wa = m:param("Wa", "blockdiag", R.normal_rsqrt_k())
local y = m.x
y = y + 2 * Wa -- here
