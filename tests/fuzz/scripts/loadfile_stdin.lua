-- expect: bad argument #1 to 'loadfile'
local f = loadfile() -- here
