-- expect: chunk 7 is not one of 8, 16, 32, 64
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.variants[1].chunk = 7
return s
