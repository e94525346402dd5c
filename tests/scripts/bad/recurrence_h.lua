-- expect: log_a must not depend on h: the recurrence must stay linear
local R = require "recur"
local m = R.mixer("bad")
local lam = m:param("lam", "channel", R.decay(0.81, 0.99))
local log_a = -R.softplus(lam) * m.h
m:recurrence { log_a = log_a, b = m.x } -- here
