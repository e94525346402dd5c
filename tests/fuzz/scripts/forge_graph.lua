-- expect: has no expression graph
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.graph = {}
return s
