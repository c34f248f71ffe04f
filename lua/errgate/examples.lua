-- errgate.examples — a policy's embedded self-test.
--
-- A policy may carry examples: failures with the decision they must get.
--   examples = {
--     { failure = 503, expect = "retry" },                       -- HTTP status
--     { failure = "timeout", expect = "retry" },                 -- a kind
--     { failure = { kind = "http", status = 503, class_hint = "permanent" },
--       expect = { action = "dlq", class = "permanent" } },
--     { name = "fifth 503 gives up", failure = 503,
--       ctx = { last_class = "transient", class_attempts = 4 },
--       expect = { action = "dlq", reason = "exhausted" } },
--     { name = "third rung", failure = 503, ctx = { retry_count = 2 },
--       expect = { action = "ladder", rung = "1h", rung_index = 3 } },
--   }
-- expect is an action string or a table of decision fields to compare
-- (action, class, code, reason, delay_ms, message, rung, rung_index);
-- fields left out are not compared. record and ctx are optional. Examples
-- run on every define(), so a policy that contradicts its own examples
-- never loads (nor, later, hot reloads). Jitter is pinned while they run
-- (random() == 0.5), so delay_ms is deterministic and may be expected too.
local examples = {}

local KEYS = { name = true, failure = true, record = true, ctx = true, expect = true }
local FIELDS = { "action", "class", "code", "reason", "delay_ms", "message", "rung", "rung_index" }

local function fail(where, fmt, ...)
  error(where .. ": " .. fmt:format(...), 0)
end

local function pinned() return 0.5 end

-- expand(v) -> failure table for the shorthand forms (status number, kind string).
local function expand(v)
  if type(v) == "number" then return { kind = "http", status = v } end
  if type(v) == "string" then return { kind = v } end
  return v
end

-- label(i, ex) -> "example 3 (http 503)" or "example 3 (the given name)"
local function label(i, ex)
  if ex.name then return ("example %d (%s)"):format(i, ex.name) end
  local f = ex.failure
  local what = f.kind == "http" and ("http " .. tostring(f.status)) or tostring(f.kind)
  if f.class_hint then what = what .. " class=" .. f.class_hint end
  return ("example %d (%s)"):format(i, what)
end

-- compile(list) -> list of { name, failure, record, ctx, expect }
-- Checks the examples' shape (not their outcome). nil means no examples.
-- Raises "examples...: ..." when malformed.
function examples.compile(list)
  if list == nil then return {} end
  if type(list) ~= "table" then fail("examples", "expected a list, got %s", type(list)) end
  local out = {}
  for i, ex in ipairs(list) do
    local where = ("example %d"):format(i)
    if type(ex) ~= "table" then fail(where, "expected a table, got %s", type(ex)) end
    for k in pairs(ex) do
      if not KEYS[k] then fail(where, "unknown key %s", tostring(k)) end
    end
    local f = expand(ex.failure)
    if type(f) ~= "table" then fail(where, "failure missing (a table, an HTTP status or a kind)") end
    local expect = ex.expect
    if type(expect) == "string" then expect = { action = expect } end
    if type(expect) ~= "table" or next(expect) == nil then
      fail(where, "expect missing (an action or a table of decision fields)")
    end
    if ex.name ~= nil and type(ex.name) ~= "string" then fail(where, "name must be a string") end
    out[i] = { name = ex.name, failure = f, record = ex.record, ctx = ex.ctx, expect = expect }
  end
  return out
end

-- check(pinned_pol, ex) -> decision, mismatch | nil, raised
-- Decides one compiled example and compares it with its expect table:
-- mismatch is nil when every expected field matches, else "expected k v,
-- got w". When decide raises, returns nil and the error.
function examples.check(pol, ex)
  local ok, d = pcall(pol.decide, pol, ex.failure, ex.record, ex.ctx)
  if not ok then return nil, tostring(d) end
  for _, k in ipairs(FIELDS) do
    local want = ex.expect[k]
    if want ~= nil and want ~= d[k] then
      return d, ("expected %s %s, got %s"):format(k, tostring(want), tostring(d[k]))
    end
  end
  return d, nil
end

-- pin(pol) -> pol with jitter pinned (random() == 0.5), as examples run.
function examples.pin(pol)
  return pol:with_random(pinned)
end

-- label(i, ex) -> the name used for example i in messages.
examples.label = label

-- run(pol, list) -> true | nil, err
-- Decides every example with pol (jitter pinned) and compares. err names
-- the first failing example and what differed.
function examples.run(pol, list)
  local pinned_pol = examples.pin(pol)
  for i, ex in ipairs(list) do
    local d, mismatch = examples.check(pinned_pol, ex)
    if not d then
      return nil, ("%s: decide raised: %s"):format(label(i, ex), mismatch)
    end
    if mismatch then
      return nil, ("%s: %s (action %s, class %s, reason %s)"):format(
        label(i, ex), mismatch, d.action, d.class, d.reason)
    end
  end
  return true
end

return examples
