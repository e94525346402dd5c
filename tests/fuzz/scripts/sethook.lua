-- expect: debug.sethook is not available
debug.sethook() -- here
while true do end
