-- A small valid mixer the hostile scripts start from.
local R = require "recur"
local m = R.mixer("toy")
local lam = m:param("lam", "channel", R.decay(0.5, 0.9))
local w = m:param("w", "channel", R.normal(0.02))
m:recurrence { log_a = -R.softplus(lam), b = R.sigmoid(w * m.x) * m.x }
m:output(m.h * R.sigmoid(m.x))
return m
