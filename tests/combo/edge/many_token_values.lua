-- expect: refuse sampled  nine per-token values with shared_sfu, one more than the token stage holds
local R = require "recur"
local m = R.mixer("manytok", { k = 64 })
local u = m:token_project("u", m:param("wu", "channel", R.normal(1)), m:param("bu", "scalar", R.zeros()))
local x = m.x
m:recurrence { log_a = -R.softplus(u),
               b = x * R.sigmoid(u) + x * x * R.tanh(u) + R.exp(x) * R.exp(u) + R.sqrt(x) * R.sqrt(u)
                 + R.log(x) * R.log(u) + R.recip(x) * R.recip(u) + R.rsqrt(x) * R.rsqrt(u) + R.sqrtb(x) * R.sqrtb(u) }
m:output(m.h)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, shared_sfu = { true } }
