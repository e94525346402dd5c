-- expect: is not an identifier
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.variants[1].name = "../../etc/x"
return s
