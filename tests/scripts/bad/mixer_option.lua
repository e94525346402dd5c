-- expect: unknown option "heads" of R.mixer (known: controller, dynamic_per_token, k)
local R = require "recur"
local m = R.mixer("bad", { k = 64, heads = 16 }) -- here
