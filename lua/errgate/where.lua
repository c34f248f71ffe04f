-- errgate.where — the `--where` expression of `errgate replay`.
--
-- An operator selects lane records with a Lua expression such as
--   headers["error.code"] == "http_400" and partition < 2
-- compile(expr) turns the text into a predicate run once per record by the
-- C core (src/commands/cmd_replay.c), inside a bounded VM (src/lib/luavm.h: JIT off, count
-- hook, wall-clock budget, memory cap), so a loop or a memory bomb is an
-- error like any other. The text is compiled as `return <expr>`; when that
-- is not valid Lua it is compiled as a block of statements whose `return`
-- gives the verdict (so `local c = headers["error.code"] return c ~= nil`
-- works too). Text only (bytecode is refused), in the policy sandbox
-- (errgate.sandbox: no os, io, ffi, debug, load...).
--
-- The expression sees these names, read-only (assigning to them, or to any
-- global, raises; their metatables are locked): headers (name -> string value, the last header of a
-- name wins), topic, partition, offset, timestamp (ms since the epoch) and
-- key (a string, or nil) of the lane record, plus `record`, a table holding
-- all of them. pairs(headers) iterates the headers. A record matches when
-- the value is truthy (anything but nil and false), as in Lua.
-- Error messages start with "--where" and fit on one line.
local sandbox = require "errgate.sandbox"

local where = {}

local loadstring, setfenv, setmetatable, pairs, error, tostring, type =
  loadstring, setfenv, setmetatable, pairs, error, tostring, type

local FIELDS = { headers = true, topic = true, partition = true, offset = true,
                 timestamp = true, key = true }

local function refuse(_, k)
  error(("cannot assign '%s': the record and the environment are read-only"):format(tostring(k)), 2)
end

-- readonly(t, proxies) -> a proxy of t whose writes raise; proxies maps the
-- proxy to t so that the environment's pairs can iterate it.
local function readonly(t, proxies)
  local p = setmetatable({}, { __index = t, __newindex = refuse, __metatable = false })
  proxies[p] = t
  return p
end

-- compile(expr) -> fn | nil, err
-- fn(rec) evaluates the expression against rec (a plain table from C with
-- the fields above; it is not modified) and returns true or false. fn
-- raises on errors inside the expression (the C core reports them with the
-- record's coordinates). err is one line starting with "--where".
function where.compile(expr)
  if type(expr) ~= "string" or not expr:find("%S") then
    return nil, "--where: the expression is empty"
  end
  if expr:sub(1, 1) == "\27" then return nil, "--where: bytecode is refused" end
  local fn, err = loadstring("return " .. expr, "=--where", "t")
  if not fn then
    local block = loadstring(expr, "=--where", "t")
    if not block then return nil, (err:gsub("%s*\n%s*", " ")) end
    fn = block
  end

  local proxies = setmetatable({}, { __mode = "k" })
  local env = sandbox.env()
  env.pairs = function(t) return pairs(proxies[t] or t) end
  local current -- the record view of the running call
  setmetatable(env, {
    __index = function(_, k)
      if current then
        if FIELDS[k] then return current[k] end
        if k == "record" then return current.view end
      end
      return nil
    end,
    __newindex = refuse,
    __metatable = false,
  })
  setfenv(fn, env)

  return function(rec)
    local headers = readonly(rec.headers or {}, proxies)
    local view = { headers = headers, topic = rec.topic, partition = rec.partition,
                   offset = rec.offset, timestamp = rec.timestamp, key = rec.key }
    current = { headers = headers, topic = rec.topic, partition = rec.partition,
                offset = rec.offset, timestamp = rec.timestamp, key = rec.key,
                view = readonly(view, proxies) }
    local v = fn()
    current = nil
    return v ~= nil and v ~= false
  end
end

return where
