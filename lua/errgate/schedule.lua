-- errgate.schedule — compiling the `retry` section of a policy.
--
-- A policy names its retry schedules (`retry = { fast = {...}, slow = {...} }`)
-- and routes refer to them by name. compile() checks one schedule spec and
-- returns a plain table with every field filled in, so the hot path
-- (errgate.backoff, errgate.route) never looks at defaults or strings again.
-- Two shapes, told apart by the compiled `shape` field.
--
-- shape "backoff": an in-place retry (route entry `{ retry = "name" }`):
--   { attempts = N,                 -- additional attempts after the first failure
--                                   -- (required, except with delays: default #delays)
--     backoff = "exponential",      -- or "fixed"; "list" when delays is given
--     base = "100ms",               -- required (except with delays); a duration (a number: ms)
--     multiplier = 2,               -- exponential only: delay n = base * multiplier^(n-1)
--                                   -- (a number from 1 to 10; default 2)
--     delays = "5s x3, 15s x5",     -- a fixed list of delays (the last repeats); inside
--                                   -- a list a bare number is milliseconds, so
--                                   -- "5000x3,10000x2" (as Spring users write it) works
--     max = "30s",                  -- cap of one delay; default max(30s, base)
--     jitter = "full",              -- "none" | "full" | "equal" | "decorrelated"
--                                   -- (default "none" for a list, else "full")
--     max_elapsed = "10m",          -- give up once this long has passed since
--                                   -- the record's first failure
-- attempts is at most 1,000, unless max_elapsed bounds the schedule in time:
-- then any integer up to 1,000,000,000, or "unlimited" (retry until
-- max_elapsed). Above 1,000 without max_elapsed the schedule is refused: a
-- retry that never gives up holds its record (and, in order, its key or
-- partition) for ever.
--     honor_retry_after = true,     -- Retry-After is a floor for the delay
--     retry_after_cap = "1m" }      -- ... but never more than this
-- (durations are named without a unit, errgate.renamed: base_ms, max_ms,
-- max_elapsed_ms and retry_after_cap_ms are still read, with a note)
-- A schedule may also be written as the delay list alone:
--   retry = { slow = "5s x3, 15s x5, 60s x10" }  -- 18 attempts, no jitter
--
-- shape "ladder": delayed retry topics (route entry `{ ladder = "name" }`):
--   { ladder = { "30s", "5m", "1h" },        -- the rungs, climbed in order
--     honor_retry_after = true,              -- Retry-After raises a rung's delay
--     retry_after_cap = "1h" }               -- ... up to this (default 1 h)
-- A rung is a duration string, which is both its name and its delay, or
-- { name = "30s", delay = "45s" }: the name stays (it is part of the rung's
-- Kafka topic, `{topic}.retry.{name}`) while an SRE changes the delay during
-- an incident. Rung names match ^[A-Za-z0-9._-]+$, are at most 32 bytes and
-- unique within a ladder; a ladder has 1 to 10 rungs. A rung name used by
-- two ladders names one topic, so it must have the same delay in both
-- (compile_all refuses otherwise).
-- A repeated rung, { delay = "30s", times = 33 [, name = "30s"] } (name
-- defaults to the delay), is `times` steps on one rung topic: each step
-- waits the delay on that topic again (a rung topic holds records of one
-- delay, so its head is always the first due). It counts as one of the 10
-- rungs and as `times` of the at most 1,000 steps a ladder has, so a
-- fixed-delay schedule of 33 steps is one rung topic, not 33. Compiled: {
-- name, shape = "ladder", rungs = { { name = "30s", delay_ms = 30000 }, ... }
-- (one entry per step: a repeated rung is `times` equal entries),
-- honor_retry_after, retry_after_cap_ms } (compiled fields are milliseconds
-- and say so).
--
-- Errors are raised as "retry.<name>: ..." strings without position; the
-- policy module adds the file and line of the define call.
local backoff = require "errgate.backoff"
local decision = require "errgate.decision"
local duration = require "errgate.duration"
local renamed = require "errgate.renamed"

local schedule = {}

local DEFAULT_MAX_MS = 30000
local DEFAULT_RETRY_AFTER_CAP_MS = 60000
local LADDER_RETRY_AFTER_CAP_MS = 3600000
local MAX_ATTEMPTS = 1000            -- without max_elapsed
local MAX_BOUNDED_ATTEMPTS = 1000000000 -- with max_elapsed (the C core counts in int)
local MAX_RUNGS = 10                 -- rung topics of one ladder
local MAX_STEPS = 1000               -- steps of one ladder (a repeated rung is `times` steps)

local function fail(where, fmt, ...)
  error(where .. ": " .. fmt:format(...), 0)
end

local KNOWN = {
  attempts = true, backoff = true, base = true, max = true, jitter = true,
  honor_retry_after = true, retry_after_cap = true, delays = true, max_elapsed = true,
  multiplier = true,
  base_ms = true, max_ms = true, retry_after_cap_ms = true, max_elapsed_ms = true, -- old names (errgate.renamed)
}
local LADDER_KNOWN = { ladder = true, honor_retry_after = true, retry_after_cap = true, retry_after_cap_ms = true }
local RUNG_KEYS = { name = true, delay = true, times = true }
local MAX_LIST = 1000
local MAX_MULTIPLIER = 10

-- parse_delays(where, v) -> list of ms
-- "5s x3, 15s x5, 60s" or a Lua list of durations; each item may carry
-- " xN" (repeat N times). Inside a list a bare number is milliseconds
-- ("5000x3,10000x2"): a list is delays by definition, so the unit the
-- plain duration refuses to guess is the one Spring's retry lists use.
local function parse_delays(where, v)
  local items = {}
  if type(v) == "string" then
    for item in v:gmatch("[^,]+") do items[#items + 1] = item end
  elseif type(v) == "table" then
    for i, item in ipairs(v) do items[i] = item end
  else
    fail(where, "delays: expected a string such as \"5s x3, 15s x5\" or a list, got %s", type(v))
  end
  local out = {}
  for _, item in ipairs(items) do
    local d, times = item, 1
    if type(item) == "string" then
      local body, n = item:match("^%s*(.-)%s*[xX]%s*(%d+)%s*$")
      if body then d, times = body, tonumber(n) else d = item:match("^%s*(.-)%s*$") end
      if d:match("^%d+$") then d = tonumber(d) end
    end
    local ms, err = duration.parse(d)
    if not ms then fail(where, "delays: %s", err) end
    if times < 1 or #out + times > MAX_LIST then fail(where, "delays: 1 to %d delays in all", MAX_LIST) end
    for _ = 1, times do out[#out + 1] = ms end
  end
  if #out == 0 then fail(where, "delays: at least one delay") end
  return out
end

-- ms_field(where, spec, key, default) -> ms: the duration under key (or
-- its old name key_ms, errgate.renamed), else default (nil: required).
local function ms_field(where, spec, key, default)
  local v = renamed.get(where, spec, key, key .. "_ms")
  if v == nil then
    if default == nil then fail(where, "%s missing (a duration such as \"100ms\")", key) end
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

-- retry_after(where, spec, s, cap_default) fills s.honor_retry_after and
-- s.retry_after_cap_ms from spec (retry_after_cap).
local function retry_after(where, spec, s, cap_default)
  local honor = spec.honor_retry_after
  if honor ~= nil and type(honor) ~= "boolean" then fail(where, "honor_retry_after must be true or false") end
  s.honor_retry_after = honor ~= false
  s.retry_after_cap_ms = ms_field(where, spec, "retry_after_cap", cap_default)
end

-- compile_rung(where, i, r) -> { name, delay_ms }, times
local function compile_rung(where, i, r)
  local at = ("%s: rung %d"):format(where, i)
  local name, delay, times
  if type(r) == "string" then
    name, delay = r, r
  elseif type(r) == "table" then
    for k in pairs(r) do
      if not RUNG_KEYS[k] then
        fail(at, "unknown key %s (a rung is { name = \"30s\", delay = \"45s\" } or { delay = \"30s\", times = 33 })",
          tostring(k))
      end
    end
    name, delay, times = r.name, r.delay, r.times
    if delay == nil then fail(at, "delay missing (a duration such as \"45s\")") end
    if times ~= nil
        and (type(times) ~= "number" or times ~= times or times < 1 or times > MAX_STEPS or times % 1 ~= 0) then
      fail(at, "times must be an integer from 1 to %d (steps on this rung), got %s", MAX_STEPS, tostring(times))
    end
    if name == nil and times ~= nil and type(delay) == "string" then name = delay end
    if type(name) ~= "string" then fail(at, "name missing (a string such as \"30s\")") end
  else
    fail(at, "expected a duration string such as \"30s\" or { name = \"30s\", delay = \"45s\" }, got %s", type(r))
  end
  if #name > decision.RUNG_MAX or not name:match(decision.RUNG_PATTERN) then
    fail(at, "name %q must be 1 to %d of A-Z a-z 0-9 . _ - (it becomes part of a topic name)", name, decision.RUNG_MAX)
  end
  local ms, err = duration.parse(delay)
  if not ms then fail(at, "%s", err) end
  return { name = name, delay_ms = ms }, times or 1
end

-- compile_ladder(name, where, spec) -> schedule of shape "ladder"
local function compile_ladder(name, where, spec)
  for k in pairs(spec) do
    if not LADDER_KNOWN[k] then
      fail(where, "unknown field %s (a ladder takes ladder, honor_retry_after, retry_after_cap)", tostring(k))
    end
  end
  local list = spec.ladder
  if type(list) ~= "table" then
    fail(where, "ladder: expected a list of rungs such as { \"30s\", \"5m\", \"1h\" }, got %s", type(list))
  end
  for k in pairs(list) do
    if type(k) ~= "number" or k < 1 or k % 1 ~= 0 or k > #list then
      fail(where, "ladder: rungs are a list; unexpected key %s", tostring(k))
    end
  end
  if #list < 1 or #list > MAX_RUNGS then
    fail(where, "ladder: 1 to %d rungs, got %d (a rung may repeat: { delay = \"30s\", times = 33 })", MAX_RUNGS, #list)
  end
  local s = { name = name, shape = "ladder", rungs = {} }
  local seen = {}
  for i, r in ipairs(list) do
    local rung, times = compile_rung(where, i, r)
    if seen[rung.name] then
      fail(where, "rung %d: name %q is already rung %d of this ladder (repeat a rung with times = N)", i, rung.name,
        seen[rung.name])
    end
    seen[rung.name] = i
    if #s.rungs + times > MAX_STEPS then fail(where, "ladder: at most %d steps in all (times included)", MAX_STEPS) end
    for _ = 1, times do s.rungs[#s.rungs + 1] = { name = rung.name, delay_ms = rung.delay_ms } end
  end
  retry_after(where, spec, s, LADDER_RETRY_AFTER_CAP_MS)
  return s
end

-- compile(name, spec) -> schedule
-- Checks spec (see above) and returns the filled-in schedule. Raises
-- "retry.<name>: ..." on unknown keys, missing or malformed fields.
function schedule.compile(name, spec)
  local where = "retry." .. tostring(name)
  if type(name) ~= "string" or not name:match("^[%a_][%w_%-%.]*$") then
    fail(where, "schedule names must be identifiers")
  end
  if type(spec) == "string" then spec = { delays = spec } end
  if type(spec) ~= "table" then fail(where, "expected a table or a delay list, got %s", type(spec)) end
  if spec.ladder ~= nil then return compile_ladder(name, where, spec) end
  for k in pairs(spec) do
    if not KNOWN[k] then fail(where, "unknown field %s", tostring(k)) end
  end
  local delays = spec.delays ~= nil and parse_delays(where, spec.delays) or nil
  local attempts = spec.attempts
  if attempts == nil and delays then attempts = #delays end
  local bounded = spec.max_elapsed ~= nil or spec.max_elapsed_ms ~= nil
  if attempts == "unlimited" or (type(attempts) == "number" and attempts > MAX_ATTEMPTS and attempts % 1 == 0
      and attempts <= MAX_BOUNDED_ATTEMPTS) then
    if not bounded then
      fail(where, "attempts %s needs max_elapsed (e.g. max_elapsed = \"1h\"): above %d attempts a schedule must be"
        .. " bounded in time, or it would hold its record for ever", tostring(attempts), MAX_ATTEMPTS)
    end
    if attempts == "unlimited" then attempts = MAX_BOUNDED_ATTEMPTS end
  elseif type(attempts) ~= "number" or attempts < 0 or attempts > MAX_ATTEMPTS or attempts % 1 ~= 0 then
    fail(where, "attempts must be an integer from 0 to %d (additional attempts after the first failure; up to %d,"
      .. " or \"unlimited\", with max_elapsed)", MAX_ATTEMPTS, MAX_BOUNDED_ATTEMPTS)
  end
  local kind = choice(where, spec, "backoff", backoff.KINDS, delays and "list" or "exponential")
  if (kind == "list") ~= (delays ~= nil) then fail(where, "backoff \"list\" goes with delays, and delays with it") end
  local s = {
    name = name,
    shape = "backoff",
    attempts = attempts,
    backoff = kind,
    delays = delays,
    jitter = choice(where, spec, "jitter", backoff.JITTER, delays and "none" or "full"),
    base_ms = delays and ms_field(where, spec, "base", delays[1]) or ms_field(where, spec, "base"),
  }
  local m = spec.multiplier
  if m ~= nil then
    if kind ~= "exponential" then fail(where, "multiplier goes with backoff \"exponential\" only") end
    if type(m) ~= "number" or m ~= m or m < 1 or m > MAX_MULTIPLIER then
      fail(where, "multiplier must be a number from 1 to %d, got %s", MAX_MULTIPLIER, tostring(m))
    end
  end
  s.multiplier = kind == "exponential" and (m or 2) or nil
  local longest = s.base_ms
  for _, d in ipairs(delays or {}) do longest = math.max(longest, d) end
  s.max_ms = ms_field(where, spec, "max", math.max(DEFAULT_MAX_MS, longest))
  s.max_elapsed_ms = ms_field(where, spec, "max_elapsed", false) or nil
  if s.max_ms < s.base_ms then
    fail(where, "max (%s) is below base (%s)", duration.format(s.max_ms), duration.format(s.base_ms))
  end
  retry_after(where, spec, s, DEFAULT_RETRY_AFTER_CAP_MS)
  return s
end

-- ladder_names(schedules) -> sorted list of the names of ladder schedules.
function schedule.ladder_names(schedules)
  local names = {}
  for name, s in pairs(schedules) do
    if s.shape == "ladder" then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

-- rungs(schedules) -> { { name, delay_ms }, ... }
-- The union of every ladder's rungs, unique by name: ladders in name order
-- (a Lua table keeps no definition order), each ladder's rungs in its own
-- order. Raises "retry.<ladder>: rung ..." when one rung name has two delays.
function schedule.rungs(schedules)
  local out, seen = {}, {}
  for _, lname in ipairs(schedule.ladder_names(schedules)) do
    for _, r in ipairs(schedules[lname].rungs) do
      local prev = seen[r.name]
      if not prev then
        seen[r.name] = { ladder = lname, delay_ms = r.delay_ms }
        out[#out + 1] = { name = r.name, delay_ms = r.delay_ms }
      elseif prev.delay_ms ~= r.delay_ms then
        fail("retry." .. lname,
          "rung %q has delay %d ms here but %d ms in ladder %s (one rung name is one topic, with one delay)",
          r.name, r.delay_ms, prev.delay_ms, prev.ladder)
      end
    end
  end
  return out
end

-- compile_all(spec) -> { name = schedule, ... }, rungs
-- Compiles the whole `retry` section (nil means no schedules); rungs is
-- schedule.rungs() of the result.
function schedule.compile_all(spec)
  local out = {}
  if spec == nil then return out, {} end
  if type(spec) ~= "table" then fail("retry", "expected a table of named schedules, got %s", type(spec)) end
  for name, s in pairs(spec) do out[name] = schedule.compile(name, s) end
  return out, schedule.rungs(out)
end

return schedule
