-- expect: controller is not text
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.variants[1].controller = "a\0b"
return s
