-- expect: attempt to load a binary chunk
local b = require "modules.binary" -- here
