-- errgate.runtime — the seam between the C core and Lua.
--
-- The C core creates a lua_State (standard libraries, JIT engine off, the
-- package paths pointing at <repo>/lua), requires this module once, and from
-- then on calls only these functions:
--   rt.load_policy(path) -> policy | nil, err     at start and on reload
--   rt.load_target(path) -> fn | nil, err         for `target = lua`
--   rt.load_config(path) -> table | nil, err      every -c CONFIG
--   rt.decider(pol) -> decide_fields, reads_record     once per (re)load
--   decide_fields(<failure and ctx fields>, record)    under lua_pcall, on
--                                                 every failure
--   rt.decide(pol, failure, record, ctx) -> decision   the same decision as
--                                                 a table (specs, tools)
--   rt.policy_id(pol) -> "name@version"           to stamp decisions
--   rt.ladder_rungs(pol) -> { {name, delay_ms}, ... }  after every (re)load:
--                                                 the rung topics to consume
--                                                 and each rung's current delay
--   rt.unguarded_classes(pol) -> { class, ... }  after every (re)load: the
--                                                 classes the dlq_guard lets pass
--   rt.known_classes(pol) -> { class, ... }     after every (re)load: the
--                                                 classes it can decide (empty: any)
--   rt.class_envelope(pol) -> { {class, hint, retryable, steps}, ... }  after
--                                                 every (re)load: errgate.hint,
--                                                 .retryable, .max-attempts
-- Loading never raises: errors come back as one line naming the file (and
-- line), ready for a log or the admin endpoint. decide raises on anything
-- invalid; the C core then applies its fallback (`hold` by default). Files
-- are run in the sandbox (errgate.sandbox). A hot reload calls load_policy
-- in a fresh state and swaps only on success; nothing here keeps state
-- between calls except the random seed and caches of derived values
-- (classify plans, formatted codes, redacted messages) that never change an
-- answer.
local lint = require "errgate.lint"
local policy = require "errgate.policy"
local sandbox = require "errgate.sandbox"

local rt = {}

-- Jitter only needs to differ between gateway instances, not to be secret.
math.randomseed(os.time() + math.floor(os.clock() * 1e6))

-- load_policy(path) -> policy | nil, err
-- Loads the policy file at path (text only, sandboxed); it must return a
-- value built by require("errgate.policy").define{...} (which ran its
-- examples) and pass errgate.lint without errors.
function rt.load_policy(path)
  local v, err = sandbox.run_file(path)
  if err then return nil, err end
  if not policy.is(v) then
    return nil, ("%s: must return require(\"errgate.policy\").define{...}, got %s"):format(path, type(v))
  end
  local lerr = lint.errors(v)
  if lerr then return nil, ("%s: lint: %s"):format(path, lerr) end
  return v
end

-- load_target(path) -> fn | nil, err
-- Loads a Lua target file (same loader and sandbox); it must return a
-- function(record).
function rt.load_target(path)
  local v, err = sandbox.run_file(path)
  if err then return nil, err end
  if type(v) ~= "function" then
    return nil, ("%s: must return a function(record), got %s"):format(path, type(v))
  end
  return v
end

-- load_config(path) -> value | nil, err
-- Runs a gateway config file (text only) in sandbox.config_env(); the C
-- loader (src/lib/config.c) validates what it returns.
function rt.load_config(path)
  return sandbox.run_file(path, sandbox.config_env())
end

-- inbox_target(format) -> fn
-- The inbox target's handler (source.inbox = format): every record of an
-- inbox is a recorded failure; fn(record, origin) returns it
-- (errgate.recorded.inbox; origin is what the C side read of where the
-- record was born, src/lib/dlq_origin.h).
-- Nothing is called: the policy triages.
function rt.inbox_target(format)
  local recorded = require "errgate.recorded"
  return function(record, origin) return recorded.inbox(record, format, origin) end
end

-- decide(pol, failure, record, ctx) -> { action, class, code, reason, delay_ms, message
--                                         [, rung, rung_index] }
-- See errgate.policy (Policy:decide) for the argument shapes (ctx carries
-- attempt, last_class, class_attempts, ordering, now_ms, first_failure_ms,
-- last_delay_ms, retry_count, rung, breaker, retry_budget) and
-- errgate.decision for the result (rung and rung_index only for "ladder").
-- Raises on an invalid policy object, failure or decision, and on errors
-- inside the policy's own functions.
function rt.decide(pol, f, record, ctx)
  if not policy.is(pol) then error("invalid policy object (use rt.load_policy)", 0) end
  return pol:decide(f, record, ctx)
end

-- decider(pol) -> decide_fields, reads_record
-- The C core's decision function for pol (Policy:scalar_decider in
-- errgate.policy): the failure's and ctx's fields go in as separate values
-- and the decision's fields come back as separate values, the same decision
-- rt.decide gives. reads_record false: the record may be passed as nil.
function rt.decider(pol)
  if not policy.is(pol) then error("invalid policy object (use rt.load_policy)", 0) end
  return pol:scalar_decider()
end

-- policy_id(pol) -> "name@version"
function rt.policy_id(pol)
  return pol.id
end

-- ladder_rungs(pol) -> array of { name = "30s", delay_ms = 30000 }
-- The union of all the policy's ladder schedules' rungs, unique by name
-- (define() refused one name with two delays): ladders in name order, each
-- ladder's rungs in its own order; an empty table when there is no ladder.
-- A fresh table each call; the C core may keep or modify it.
function rt.ladder_rungs(pol)
  if not policy.is(pol) then error("invalid policy object (use rt.load_policy)", 0) end
  local out = {}
  for i, r in ipairs(pol.rungs) do out[i] = { name = r.name, delay_ms = r.delay_ms } end
  return out
end

-- unguarded_classes(pol) -> array of class names whose dead letters pass
-- the dead-letter flood guard (route entries with guard = false); a fresh
-- table each call.
function rt.unguarded_classes(pol)
  if not policy.is(pol) then error("invalid policy object (use rt.load_policy)", 0) end
  local out = {}
  for i, c in ipairs(pol.unguarded) do out[i] = c end
  return out
end

-- class_envelope(pol) -> array of { class, hint, retryable, steps } per class of
-- the route table (default included; errgate.route.class_envelope): what
-- the lane writer puts in errgate.hint and errgate.retryable. Empty for a
-- route function. A fresh table.
function rt.class_envelope(pol)
  if not policy.is(pol) then error("invalid policy object (use rt.load_policy)", 0) end
  local out = {}
  for i, e in ipairs(pol.envelope or {}) do
    out[i] = { class = e.class, hint = e.hint, retryable = e.retryable, steps = e.steps }
  end
  return out
end

-- known_classes(pol) -> array of the class names the policy names: those
-- its classify rules return and its route table names ("default" aside),
-- sorted; an empty table when it cannot tell (classify or route is a
-- function). A class only a service's explicit Error-Class gives is not
-- among them. Operator overrides are checked against it (a typo in a class
-- is refused). A fresh table.
function rt.known_classes(pol)
  if not policy.is(pol) then error("invalid policy object (use rt.load_policy)", 0) end
  local s, seen, out = pol.shape, {}, {}
  if s.classify_fn or s.route_fn then return out end
  for _, r in ipairs(s.rules) do
    if r.class then seen[r.class] = true end
  end
  for class in pairs(s.routes) do
    if class ~= "default" then seen[class] = true end
  end
  for class in pairs(seen) do out[#out + 1] = class end
  table.sort(out)
  return out
end

-- harden(): called once by the C core on each of its states (not by tests
-- that require this module): string methods become the guarded ones.
rt.harden = sandbox.harden

-- cli_check(pol[, ordering]) / cli_test(pol, cases_path) /
-- cli_test_recorded(pol, jsonl) -> text, exit code
-- The `errgate policy` commands (errgate.cli), loaded only when used.
function rt.cli_check(pol, ordering) return require("errgate.cli").check(pol, { ordering = ordering }) end
function rt.cli_test(pol, path) return require("errgate.cli").test(pol, path) end
function rt.cli_test_recorded(pol, jsonl) return require("errgate.cli").test_recorded(pol, jsonl) end

return rt
