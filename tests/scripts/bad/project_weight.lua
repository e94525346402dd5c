-- expect: W must be a block-diagonal weight of mixer bad
local R = require "recur"
local m = R.mixer("bad")
local b = m:param("b", "channel", R.zeros())
local p = m:project("p", b, b) -- here
