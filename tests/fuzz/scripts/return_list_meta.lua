-- expect: not a table with a metatable
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } }
return setmetatable({ s }, { __len = function() while true do end end }) -- here
