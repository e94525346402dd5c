-- expect: nested more than 100 levels
local R = require "recur"
return R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 }, -- here
                    rules = { { string.rep("-", 120) .. "D", "deep" } } }
