-- expect: the bias must be a channel parameter of mixer bad, got the scalar parameter s
local R = require "recur"
local m = R.mixer("bad")
local W = m:param("W", "blockdiag", R.normal_rsqrt_k())
local s = m:param("s", "scalar", R.const(1))
local p = m:project("p", W, -- here
                    s)
