-- expect: reads parameter 16
local R = require "recur"
local core = require "recur.core"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.y = core.op(s.mixer.graph, "mul", s.mixer.y, core.leaf(s.mixer.graph, "param", 15))
return s
