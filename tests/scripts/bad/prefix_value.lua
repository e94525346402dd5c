-- expect: prefix 16 is not one of 32, 64, 128
local R = require "recur"
local rglru = require "arch.rglru"
local set = R.variants { mixer = rglru, chunk = { 8 }, prefix = { 16 } } -- here
return set
