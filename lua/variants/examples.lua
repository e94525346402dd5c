-- The three published mixers shipped as examples, every variant set of
-- each: minGRU (lua/variants/mingru.lua), HGRN (lua/variants/hgrn.lua)
-- and a Mamba-2-style scalar decay (lua/variants/mamba2.lua). Not part of
-- lua/variants/all.lua, the default grid:
--   recur gen lua/variants/examples.lua -o out/examples
-- Each require is bound to a local first (require returns two values).
local mingru = require "variants.mingru"
local hgrn = require "variants.hgrn"
local mamba2 = require "variants.mamba2"

local all = {}
for _, sets in ipairs { mingru, hgrn, mamba2 } do
  for _, s in ipairs(sets) do all[#all + 1] = s end
end
return all
