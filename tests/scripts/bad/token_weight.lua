-- expect: w must be a channel parameter of mixer bad, got the scalar parameter s
local R = require "recur"
local m = R.mixer("bad")
local s = m:param("s", "scalar", R.zeros())
local u = m:token_project("u", s, s) -- here
