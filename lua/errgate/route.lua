-- errgate.route — from a class to what happens to the record.
--
-- A route table maps class names to entries; the reserved key `default`
-- (required) catches every class the table does not name. An entry is:
--   "dlq" | "quarantine" | "ignore" | "hold" | "stop"
--   { retry = "schedule", exhausted = "dlq" }   retry in place with the named
--        schedule; once its attempts are used up, the `exhausted` entry
--        (any terminal entry, default "dlq") applies with reason "exhausted"
--   { action = "hold", delay_ms = "5s", reason = ..., code = ..., message = ... }
--        the long form of a terminal entry; action = "retry" is allowed here
--        with an explicit delay_ms
-- A route may instead be a function(failure, record, ctx) returning an entry
-- in any of these forms; ctx is then the C core's ctx plus class, code and
-- streak (see below). The class itself is not a route's to change: the
-- retry count is kept per class, so a route that relabels would reset it.
-- Retry counting: streak = failures of this class in a row, including this
-- one (1 after a class change); retry n = streak while streak <= attempts.
-- Ladders (`{ ladder = "name" }`) will be another entry form compiled here,
-- next to `retry`; until then "ladder" is refused in routes.
-- compile-time errors are "route...: ..." strings without position.
local backoff = require "errgate.backoff"
local duration = require "errgate.duration"

local route = {}

local TERMINAL = { dlq = true, quarantine = true, ignore = true, hold = true, stop = true }
local LONG_KEYS = { action = true, delay_ms = true, reason = true, code = true, message = true }
local RETRY_KEYS = { retry = true, exhausted = true }

local function fail(where, fmt, ...)
  error(where .. ": " .. fmt:format(...), 0)
end

local function check_keys(where, t, known)
  for k in pairs(t) do
    if not known[k] then fail(where, "unknown key %s", tostring(k)) end
  end
end

local function check_action(where, a, allow_retry)
  if a == "ladder" then fail(where, "ladder routes are not supported yet") end
  if a == "retry" and not allow_retry then
    fail(where, "retry needs a schedule: { retry = \"name\" }")
  end
  if not TERMINAL[a] and a ~= "retry" then
    fail(where, "unknown action %s (want dlq, quarantine, ignore, hold, stop, or { retry = \"schedule\" })", tostring(a))
  end
end

local function opt_string(where, t, key)
  local v = t[key]
  if v ~= nil and (type(v) ~= "string" or v == "") then fail(where, "%s must be a non-empty string", key) end
  return v
end

-- compile_terminal(where, e, allow_retry) -> entry
local function compile_terminal(where, e, allow_retry)
  if type(e) == "string" then
    check_action(where, e, false)
    return { action = e }
  end
  if e.class ~= nil then fail(where, "class is decided by classify; a route cannot change it") end
  check_keys(where, e, LONG_KEYS)
  check_action(where, e.action, allow_retry)
  local out = {
    action = e.action,
    reason = opt_string(where, e, "reason"),
    code = opt_string(where, e, "code"),
    message = opt_string(where, e, "message"),
  }
  if e.delay_ms ~= nil then
    if e.action ~= "hold" and e.action ~= "retry" then fail(where, "delay_ms only applies to hold and retry") end
    local ms, err = duration.parse(e.delay_ms)
    if not ms then fail(where, "delay_ms: %s", err) end
    out.delay_ms = ms
  elseif e.action == "retry" then
    fail(where, "action retry needs delay_ms (or use { retry = \"schedule\" })")
  end
  return out
end

-- compile_entry(where, e, schedules) -> entry
-- One route entry in any accepted form, checked against the schedules.
-- Raises "<where>: ..." when it is malformed.
function route.compile_entry(where, e, schedules)
  if type(e) == "table" and e.retry ~= nil then
    check_keys(where, e, RETRY_KEYS)
    local s = schedules[e.retry]
    if type(e.retry) ~= "string" or not s then
      fail(where, "retry schedule %s is not defined in retry", tostring(e.retry))
    end
    local ex = e.exhausted
    if ex == nil then ex = "dlq" end
    if type(ex) ~= "string" and type(ex) ~= "table" then fail(where .. ".exhausted", "expected an action") end
    return { action = "retry", schedule = s, exhausted = compile_terminal(where .. ".exhausted", ex, false) }
  end
  if type(e) ~= "string" and type(e) ~= "table" then
    fail(where, "expected an action string or table, got %s", type(e))
  end
  return compile_terminal(where, e, true)
end

-- resolve(e, f, ctx, random) -> draft
-- Applies a compiled entry to the failure f given ctx.streak; the draft
-- (action, reason, delay_ms, code, message) is finalized by errgate.decision.
function route.resolve(e, f, ctx, random)
  local reason = e.reason
  if e.schedule then
    local s = e.schedule
    local elapsed = (tonumber(ctx.now_ms) or 0) - (tonumber(ctx.first_failure_ms) or 0)
    if ctx.streak <= s.attempts and not (s.max_elapsed_ms and elapsed >= s.max_elapsed_ms) then
      local ms = backoff.retry_delay(s, ctx.streak, f.retry_after_ms, random, ctx.last_delay_ms)
      return { action = "retry", delay_ms = ms }
    end
    e = e.exhausted
    reason = e.reason or "exhausted"
  end
  return { action = e.action, reason = reason, delay_ms = e.delay_ms, code = e.code, message = e.message }
end

local function compile_table(spec, schedules)
  local entries = {}
  for class, e in pairs(spec) do
    if type(class) ~= "string" then fail("route", "keys must be class names, got %s", tostring(class)) end
    entries[class] = route.compile_entry("route." .. class, e, schedules)
  end
  if not entries.default then fail("route", "default entry missing (every route table needs one)") end
  return function(class, f, _, ctx, random)
    return route.resolve(entries[class] or entries.default, f, ctx, random)
  end
end

local function compile_function(fn, schedules)
  return function(_, f, record, ctx, random)
    local e = fn(f, record, ctx)
    if e == nil then error("invalid decision: route function returned nothing", 0) end
    local ok, compiled = pcall(route.compile_entry, "route function result", e, schedules)
    if not ok then error("invalid decision: " .. tostring(compiled), 0) end
    return route.resolve(compiled, f, ctx, random)
  end
end

-- compile(spec, schedules) -> fn(class, failure, record, ctx, random) -> draft
-- spec: a route table or a function(failure, record, ctx); schedules: the
-- compiled retry section. ctx must carry streak.
function route.compile(spec, schedules)
  if type(spec) == "function" then return compile_function(spec, schedules) end
  if type(spec) ~= "table" then fail("route", "missing (want a table of class -> action, or a function)") end
  return compile_table(spec, schedules)
end

return route
