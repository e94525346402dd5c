-- expect: no file
local m = require "arch.no_such_mixer" -- here
