-- errgate.schedule — compiling the `retry` section of a policy.
--
-- A policy names its retry schedules (`retry = { fast = {...}, slow = {...} }`)
-- and routes refer to them by name. compile() checks one schedule spec and
-- returns a plain table with every field filled in, so the hot path
-- (errgate.backoff, errgate.route) never looks at defaults or strings again.
-- Today there is one shape, an in-place backoff:
--   { attempts = N,                 -- additional attempts after the first failure (required)
--     backoff = "exponential",      -- or "fixed"
--     base_ms = 100,                -- required; ms or "100ms"
--     max_ms = 30000,               -- cap of one delay; default max(30s, base_ms)
--     jitter = "full",              -- "none" | "full" | "equal"
--     honor_retry_after = true,     -- Retry-After is a floor for the delay
--     retry_after_cap_ms = 60000 }  -- ... but never more than this
-- The compiled table adds name and shape = "backoff". Ladders (a list of
-- rung delays written as "30s x3, 5m"), retry budgets and total-time caps
-- are further shapes and fields: each gets its own branch in compile() and
-- keeps this table's layout, so routes can tell them apart by `shape`.
-- Errors are raised as "retry.<name>: ..." strings without position; the
-- policy module adds the file and line of the define call.
local backoff = require "errgate.backoff"
local duration = require "errgate.duration"

local schedule = {}

local DEFAULT_MAX_MS = 30000
local DEFAULT_RETRY_AFTER_CAP_MS = 60000
local MAX_ATTEMPTS = 1000

local KNOWN = {
  attempts = true, backoff = true, base_ms = true, max_ms = true, jitter = true,
  honor_retry_after = true, retry_after_cap_ms = true,
}

local function fail(where, fmt, ...)
  error(where .. ": " .. fmt:format(...), 0)
end

local function ms_field(where, spec, key, default)
  local v = spec[key]
  if v == nil then
    if default == nil then fail(where, "%s missing (ms or a duration such as \"100ms\")", key) end
    return default
  end
  local ms, err = duration.parse(v)
  if not ms then fail(where, "%s: %s", key, err) end
  return ms
end

local function choice(where, spec, key, set, default)
  local v = spec[key]
  if v == nil then return default end
  if not set[v] then
    local names = {}
    for k in pairs(set) do names[#names + 1] = k end
    table.sort(names)
    fail(where, "%s %s unknown (want %s)", key, tostring(v), table.concat(names, ", "))
  end
  return v
end

-- compile(name, spec) -> schedule
-- Checks spec (see above) and returns the filled-in schedule. Raises
-- "retry.<name>: ..." on unknown keys, missing or malformed fields.
function schedule.compile(name, spec)
  local where = "retry." .. tostring(name)
  if type(name) ~= "string" or not name:match("^[%a_][%w_%-%.]*$") then
    fail(where, "schedule names must be identifiers")
  end
  if type(spec) ~= "table" then fail(where, "expected a table, got %s", type(spec)) end
  for k in pairs(spec) do
    if not KNOWN[k] then fail(where, "unknown field %s", tostring(k)) end
  end
  local attempts = spec.attempts
  if type(attempts) ~= "number" or attempts < 0 or attempts > MAX_ATTEMPTS or attempts % 1 ~= 0 then
    fail(where, "attempts must be an integer from 0 to %d (additional attempts after the first failure)", MAX_ATTEMPTS)
  end
  local s = {
    name = name,
    shape = "backoff",
    attempts = attempts,
    backoff = choice(where, spec, "backoff", backoff.KINDS, "exponential"),
    jitter = choice(where, spec, "jitter", backoff.JITTER, "full"),
    base_ms = ms_field(where, spec, "base_ms"),
  }
  s.max_ms = ms_field(where, spec, "max_ms", math.max(DEFAULT_MAX_MS, s.base_ms))
  if s.max_ms < s.base_ms then fail(where, "max_ms (%d) is below base_ms (%d)", s.max_ms, s.base_ms) end
  local honor = spec.honor_retry_after
  if honor ~= nil and type(honor) ~= "boolean" then fail(where, "honor_retry_after must be true or false") end
  s.honor_retry_after = honor ~= false
  s.retry_after_cap_ms = ms_field(where, spec, "retry_after_cap_ms", DEFAULT_RETRY_AFTER_CAP_MS)
  return s
end

-- compile_all(spec) -> { name = schedule, ... }
-- Compiles the whole `retry` section (nil means no schedules).
function schedule.compile_all(spec)
  local out = {}
  if spec == nil then return out end
  if type(spec) ~= "table" then fail("retry", "expected a table of named schedules, got %s", type(spec)) end
  for name, s in pairs(spec) do out[name] = schedule.compile(name, s) end
  return out
end

return schedule
