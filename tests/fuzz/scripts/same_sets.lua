-- expect: ok 1
-- two sets declaring the same variants are one
local R = require "recur"
local toy = require "modules.toy"
return { R.variants { mixer = toy, chunk = { 8 }, prefix = { 32 } },
         R.variants { mixer = toy, chunk = { 8 }, prefix = { 32 } } }
