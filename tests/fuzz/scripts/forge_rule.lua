-- expect: cdiv takes 2 arguments
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.rules[1] = { expr = "cdiv(D)", message = "m" }
return s
