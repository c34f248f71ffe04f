-- attack: the handler answers tables full of metamethods (__index, __len, __eq, __tostring, __concat, __call raising or looping) with fields of the wrong types; expect: read raw, a failure of kind lua or http, never an exit or a hang
local function loop() while true do end end
local mt = { __index = loop, __len = loop, __eq = loop, __lt = loop, __le = loop, __tostring = loop,
  __concat = loop, __call = loop, __unm = loop, __add = function() error("trap") end }
local n = 0
return function(record)
  n = n + 1
  local t = setmetatable({}, mt)
  if n % 3 == 0 then
    return setmetatable({ status = t, message = t, class = t, code = t, retry_after_ms = t }, mt)
  elseif n % 3 == 1 then
    return setmetatable({ status = "503", message = ("m"):rep(100000), retry_after_ms = -5 }, mt)
  end
  return t
end
