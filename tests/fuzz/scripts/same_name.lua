-- expect: a manifest holds one mixer per name
local R = require "recur"
local m = R.mixer("toy")
local lam = m:param("lam", "channel", R.zeros())
m:recurrence { log_a = -R.softplus(lam), b = m.x }
m:output(m.h)
return { R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } },
         R.variants { mixer = m, chunk = { 16 }, prefix = { 32 } } } -- here
