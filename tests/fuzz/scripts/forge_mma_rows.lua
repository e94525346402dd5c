-- expect: mma and rows are two forms of the decode step
local R = require "recur"
local s = R.decode { mixer = require "modules.toy", rows = true } -- here
s.variants[1].mma = true
s.variants[1].name = "toy_decode_mma"
return s
