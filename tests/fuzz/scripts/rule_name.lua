-- expect: unknown name 'Q'
local R = require "recur"
return R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 }, -- here
                    rules = { { "Q > 1", "never" } } }
