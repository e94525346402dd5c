-- expect: a token projection takes a channel weight and a scalar bias
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.projs[1] = { name = "u", kind = "token", weight = 0, bias = 1, rsqrt_d = false, line = 1 }
return s
