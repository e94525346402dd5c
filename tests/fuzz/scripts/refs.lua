-- expect: ok 1
-- 20000 references to one set are one set
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } }
local t = {}
for i = 1, 20000 do t[i] = s end
return t
