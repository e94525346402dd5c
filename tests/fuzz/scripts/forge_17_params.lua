-- expect: params has 17 entries, expected 0 to 16
-- a set forged after R.variants: the C side reads nothing it does not check
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
for i = 3, 17 do
  local p = {}
  for k, v in pairs(s.mixer.params[1]) do p[k] = v end
  p.name = "p" .. i
  s.mixer.params[i] = p
end
return s
