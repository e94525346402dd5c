-- expect: duplicate name lam: mixer bad already has a parameter of that name (line 4)
local R = require "recur"
local m = R.mixer("bad")
local lam = m:param("lam", "channel", R.zeros())
local W = m:param("W", "blockdiag", R.normal_rsqrt_k())
local lam2 = m:project("lam", W, lam) -- here
