-- expect: but its flags make it
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.variants[1].fused = true
return s
