-- expect: not finite in float32
local R = require "recur"
local m = R.mixer("m")
local zero = m.x - m.x
local e = R.exp(zero + 100) -- here
