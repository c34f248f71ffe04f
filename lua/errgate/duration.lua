-- errgate.duration — durations as policy authors write them.
--
-- Every duration on errgate's Lua side is an integer number of milliseconds.
-- Authors may write a plain number (already milliseconds) or a string with
-- units: "250ms", "5s", "1m", "2h", "7d", "1.5s", or a compound such as "1m30s".
-- A string without a unit ("100") is refused: a reader cannot tell whether it
-- means milliseconds or seconds. parse() never raises; it returns nil and a
-- message so the caller can name the field that was wrong. format() is the
-- inverse, for messages and (later) rung topic names such as "retry.30s".
-- Lists of delays ("5s x3, 1m") belong to retry ladders and will be parsed
-- next to them, reusing parse() for each element.
local duration = {}

local UNIT_MS = { ms = 1, s = 1000, m = 60000, h = 3600000, d = 86400000 }
local MAX_TEXT = 64 -- longer duration strings are certainly mistakes

-- parse(v) -> ms | nil, err
-- v: a non-negative finite number of milliseconds, or a string of one or more
-- <number><unit> parts (units ms, s, m, h, d; spaces allowed between parts).
-- Returns the total rounded to the nearest integer millisecond.
function duration.parse(v)
  local t = type(v)
  if t == "number" then
    if v ~= v or v < 0 or v == math.huge then
      return nil, ("invalid duration %s (want a non-negative number of ms)"):format(tostring(v))
    end
    return math.floor(v + 0.5)
  end
  if t ~= "string" then
    return nil, ("invalid duration of type %s (want ms or a string like \"5s\")"):format(t)
  end
  if #v > MAX_TEXT then return nil, "invalid duration (text too long)" end
  local total, pos, parts = 0, 1, 0
  local s = v:match("^%s*(.-)%s*$")
  while pos <= #s do
    local num, unit, nxt = s:match("^(%d+%.?%d*)%s*(%a*)%s*()", pos)
    if not num then
      return nil, ("invalid duration %q (want e.g. \"100ms\", \"5s\", \"1m30s\")"):format(v)
    end
    if unit == "" then
      return nil, ("invalid duration %q: a unit is required (ms, s, m, h, d)"):format(v)
    end
    local scale = UNIT_MS[unit]
    if not scale then
      return nil, ("invalid duration %q: unknown unit %q (ms, s, m, h, d)"):format(v, unit)
    end
    total = total + tonumber(num) * scale
    parts, pos = parts + 1, nxt
  end
  if parts == 0 then return nil, "invalid duration (empty string)" end
  return math.floor(total + 0.5)
end

-- format(ms) -> string
-- The shortest compound spelling of a non-negative integer duration:
-- 0 -> "0ms", 1500 -> "1s500ms", 90000 -> "1m30s", 3600000 -> "1h".
function duration.format(ms)
  ms = math.floor(ms)
  if ms <= 0 then return "0ms" end
  local out = {}
  for _, u in ipairs({ { "h", 3600000 }, { "m", 60000 }, { "s", 1000 }, { "ms", 1 } }) do
    local n = math.floor(ms / u[2])
    if n > 0 then
      out[#out + 1] = n .. u[1]
      ms = ms - n * u[2]
    end
  end
  return table.concat(out)
end

return duration
