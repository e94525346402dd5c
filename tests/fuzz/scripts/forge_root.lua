-- expect: log_a must be an integer from 0 to
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.log_a = 1 << 40
return s
