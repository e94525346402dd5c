-- Every variant set the generator emits by default (`recur gen` without a
-- script). Modules resolve from the lua/ root: variants.x is
-- lua/variants/x.lua, arch.x is lua/arch/x.lua. Each returns a list of
-- variant sets; this script returns them all in one list.
--
-- Each require is bound to a local first: require returns two values (the
-- module and its file name), and as the last item of a table constructor
-- both would land in the list.
local rglru = require "variants.rglru"
local samu = require "variants.samu"

local all = {}
for _, sets in ipairs { rglru, samu } do
  for _, s in ipairs(sets) do all[#all + 1] = s end
end
return all
