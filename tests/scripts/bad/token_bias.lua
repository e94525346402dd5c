-- expect: the bias must be a scalar parameter of mixer bad, got the channel parameter c
local R = require "recur"
local m = R.mixer("bad")
local w = m:param("w", "channel", R.normal(1))
local c = m:param("c", "channel", R.zeros())
local u = m:token_project("u", w, c, { scale = "rsqrt_d" }) -- here
