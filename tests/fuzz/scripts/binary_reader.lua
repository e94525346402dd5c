-- expect: attempt to load a binary chunk
local chunk, done = string.dump(function() return 1 end), false
local f = assert(load(function() if done then return nil end done = true return chunk end)) -- here
