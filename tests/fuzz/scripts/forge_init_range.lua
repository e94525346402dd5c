-- expect: R.decay(lo, hi) needs 0 < lo <= hi < 1
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.params[1].a = -1
return s
