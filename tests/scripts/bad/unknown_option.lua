-- expect: unknown option "colour" of R.variants
local R = require "recur"
return R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, colour = "red" } -- here
