-- errgate.json — a JSON decoder whose every allocation is the Lua VM's.
--
-- errgate decodes JSON that comes from outside: a target's error body
-- (errgate.failure, on the decision path, inside a policy's memory and time
-- budget), lane records read back from a topic and case files (errgate.cli,
-- errgate.recorded). A C decoder such as lua-cjson keeps its scratch buffer
-- in malloc'd memory that it frees only on the paths it expects: when the
-- VM refuses an allocation mid-document (memory cap, or the call overran its
-- deadline) the error unwinds through the C decoder and the buffer leaks,
-- outside every budget, once per call. This decoder is plain Lua: its
-- strings and tables live in the VM, the count hook bounds its time, and an
-- error raised inside it (a budget) unwinds with nothing to leak.
--
-- decode(s) -> value | nil, message. RFC 8259 JSON: objects become tables
-- keyed by string (a repeated key: the last wins), arrays tables 1..n,
-- numbers Lua numbers, strings Lua strings with \u escapes (surrogate pairs
-- joined) written as UTF-8. A null member of an object is absent (the Lua
-- way: `doc.x == nil`, and no null can pass for a table); a null in an
-- array is json.null, so the array keeps its positions. Nesting deeper than MAX_DEPTH, trailing bytes, leading zeros,
-- lone surrogates and raw control characters in strings are refused with
-- the byte position. Errors are returned, never raised: a budget error
-- raised by the VM while decoding is not caught here and stays the caller's.
local json = {}

local byte, sub, find, char, concat = string.byte, string.sub, string.find, string.char, table.concat
local tonumber, type, floor, setmetatable = tonumber, type, math.floor, setmetatable

-- json.null: a JSON null in an array (an empty table nothing can write to).
json.null = setmetatable({}, {
  __newindex = function() error("errgate.json: null is read-only", 2) end,
  __tostring = function() return "null" end,
  __metatable = "null",
})
local NULL = json.null

-- json.MAX_DEPTH: the deepest nesting of arrays and objects decoded.
json.MAX_DEPTH = 100
local MAX_DEPTH = json.MAX_DEPTH

local ESCAPE = {
  [34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [102] = "\f", [110] = "\n", [114] = "\r", [116] = "\t",
}
local LITERAL = { [116] = { "true", true }, [102] = { "false", false }, [110] = { "null", NULL } }

local function fail(what, pos) return nil, "invalid JSON: " .. what .. " at byte " .. pos end

local function skip(s, i)
  local _, e = find(s, "^[ \t\r\n]*", i)
  return e + 1
end

-- UTF-8 bytes of code point cp (0 <= cp <= 0x10FFFF, not a surrogate).
local function utf8(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + floor(cp / 0x40), 0x80 + cp % 0x40) end
  if cp < 0x10000 then
    return char(0xE0 + floor(cp / 0x1000), 0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return char(0xF0 + floor(cp / 0x40000), 0x80 + floor(cp / 0x1000) % 0x40, 0x80 + floor(cp / 0x40) % 0x40,
    0x80 + cp % 0x40)
end

-- hex4(s, i) -> the code unit of the 4 hex digits at s[i..i+3] | nil
local function hex4(s, i)
  local h = sub(s, i, i + 3)
  if not find(h, "^%x%x%x%x$") then return nil end
  return tonumber(h, 16)
end

-- string_at(s, i) -> string, next position | nil, message; s[i] is '"'
local function string_at(s, i)
  local parts, n, j = nil, 0, i + 1
  while true do
    local k = find(s, '["\\%z\1-\31]', j)
    if not k then return fail("unterminated string", i) end
    local c = byte(s, k)
    if c == 34 then
      if not parts then return sub(s, j, k - 1), k + 1 end
      parts[n + 1] = sub(s, j, k - 1)
      return concat(parts, "", 1, n + 1), k + 1
    end
    if c ~= 92 then return fail("control character in string", k) end
    parts = parts or {}
    n = n + 1
    parts[n] = sub(s, j, k - 1)
    local e = byte(s, k + 1)
    if e == 117 then -- \uXXXX
      local cp = hex4(s, k + 2)
      j = k + 6
      if not cp then return fail("bad \\u escape", k) end
      if cp >= 0xDC00 and cp <= 0xDFFF then return fail("lone low surrogate", k) end
      if cp >= 0xD800 and cp <= 0xDBFF then
        local lo = sub(s, j, j + 1) == "\\u" and hex4(s, j + 2)
        if not lo or lo < 0xDC00 or lo > 0xDFFF then return fail("lone high surrogate", k) end
        cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
        j = j + 6
      end
      n = n + 1
      parts[n] = utf8(cp)
    else
      local r = e and ESCAPE[e]
      if not r then return fail("bad escape", k) end
      n = n + 1
      parts[n] = r
      j = k + 2
    end
  end
end

-- number_at(s, i) -> number, next position | nil, message
local function number_at(s, i)
  local _, e = find(s, "^-?%d+", i)
  if not e then return fail("unexpected character", i) end
  if find(s, "^-?0%d", i) then return fail("leading zero", i) end
  local _, f = find(s, "^%.%d+", e + 1)
  if f then e = f end
  _, f = find(s, "^[eE][-+]?%d+", e + 1)
  if f then e = f end
  return tonumber(sub(s, i, e)), e + 1
end

local value_at

-- array_at / object_at(s, i, depth) -> table, next position | nil, message;
-- s[i] is '[' or '{'
local function array_at(s, i, depth)
  local t, n = {}, 0
  i = skip(s, i + 1)
  if byte(s, i) == 93 then return t, i + 1 end
  while true do
    local v, j = value_at(s, i, depth)
    if v == nil then return nil, j end
    n = n + 1
    t[n] = v
    i = skip(s, j)
    local c = byte(s, i)
    if c == 93 then return t, i + 1 end
    if c ~= 44 then return fail("expected ',' or ']'", i) end
    i = skip(s, i + 1)
  end
end

local function object_at(s, i, depth)
  local t = {}
  i = skip(s, i + 1)
  if byte(s, i) == 125 then return t, i + 1 end
  while true do
    if byte(s, i) ~= 34 then return fail("expected a string key", i) end
    local k, j = string_at(s, i)
    if k == nil then return nil, j end
    i = skip(s, j)
    if byte(s, i) ~= 58 then return fail("expected ':'", i) end
    local v
    v, j = value_at(s, skip(s, i + 1), depth)
    if v == nil then return nil, j end
    if v == NULL then v = nil end
    t[k] = v
    i = skip(s, j)
    local c = byte(s, i)
    if c == 125 then return t, i + 1 end
    if c ~= 44 then return fail("expected ',' or '}'", i) end
    i = skip(s, i + 1)
  end
end

-- value_at(s, i, depth) -> value, next position | nil, message
function value_at(s, i, depth)
  local c = byte(s, i)
  if c == 34 then return string_at(s, i) end
  if c == 123 or c == 91 then
    if depth >= MAX_DEPTH then return fail("nesting deeper than " .. MAX_DEPTH, i) end
    if c == 123 then return object_at(s, i, depth + 1) end
    return array_at(s, i, depth + 1)
  end
  local lit = c and LITERAL[c]
  if lit then
    local word = lit[1]
    if sub(s, i, i + #word - 1) ~= word then return fail("unexpected character", i) end
    return lit[2], i + #word
  end
  if c == nil then return fail("unexpected end", i) end
  return number_at(s, i)
end

function json.decode(s)
  if type(s) ~= "string" then return nil, "invalid JSON: not a string" end
  local v, i = value_at(s, skip(s, 1), 0)
  if v == nil then return nil, i end
  i = skip(s, i)
  if i <= #s then return fail("trailing characters", i) end
  return v
end

return json
