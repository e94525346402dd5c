-- expect: prefix must be an integer from 1 to 1024
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.variants[1].prefix = 0
return s
