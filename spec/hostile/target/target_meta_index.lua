-- attack: the handler answers a failure table whose __index loops (the C core used to read its fields with lua_getfield, outside any budget); expect: fields read raw, a failure, records keep flowing
local trap = { __index = function() while true do end end }
return function(record)
  return setmetatable({}, trap)
end
