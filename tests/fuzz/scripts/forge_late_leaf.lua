-- expect: reads parameter 2
-- a leaf past the set's parameters, even where no root reaches it: the
-- manifest's graph holds every node
local R = require "recur"
local core = require "recur.core"
local m = R.mixer("m")
local lam = m:param("lam", "channel", R.zeros())
m:recurrence { log_a = -R.softplus(lam), b = m.x }
m:output(m.h)
local s = R.variants { mixer = m, chunk = { 8 }, prefix = { 32 } } -- here
core.leaf(s.mixer.graph, "param", 1)
return s
