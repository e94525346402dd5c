-- expect: log_a and b must not depend on h
local R = require "recur"
local core = require "recur.core"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.log_a = core.leaf(s.mixer.graph, "h", 0)
return s
