-- expect: dynamic_per_token: shape expression
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.dyn_per_token = "2*("
return s
