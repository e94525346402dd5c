-- expect: instructions
while true do
  pcall(coroutine.wrap(function() while true do end end))
end
