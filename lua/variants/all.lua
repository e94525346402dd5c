-- Every variant set the generator emits by default (`recur gen` without a
-- script). Modules resolve from the lua/ root: variants.x is
-- lua/variants/x.lua, arch.x is lua/arch/x.lua.
--
-- Each require is bound to a local first: require returns two values (the
-- module and its file name), and as the last item of a table constructor
-- both would land in the list.
local rglru = require "variants.rglru"
local samu = require "variants.samu"

return { rglru, samu }
