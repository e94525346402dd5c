-- expect: rule 1: shape expression "D +* 3"
local R = require "recur"
return R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 }, -- here
                    rules = { { "D +* 3", "never" } } }
