-- expect: one line of text
local R = require "recur"
return R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 }, -- here
                    rules = { { "D > 0", "two\nlines" } } }
