-- errgate.classify — from a failure to a (class, code) pair.
--
-- A policy classifies either with a function(failure, record) -> class, code
-- or, more usually, with an ordered list of rules; the first rule whose
-- matchers all hold wins. Matchers (all optional, combined with AND):
--   explicit = true      the service named the class (Error-Class header or
--                        JSON body): class = failure.class_hint
--   kind = "connect"     failure kind, or a list of kinds (http, timeout,
--                        connect, lua, circuit_open: the C core did not send
--                        the record because the target's breaker is open;
--                        recorded: inbox mode, a DLQ record's failure)
--   status = 503         also {408, 429}, {range = {500, 599}}, "5xx", or a
--                        list mixing those
--   code = "^RATE_"      Lua pattern on failure.code (the service's code)
--   message = "quota"    plain substring of failure.message
--   header = {name, value}  record header equals value (value omitted:
--                        the header is present)
-- Outputs: class (required unless explicit) and set_code (optional; `code`
-- is a matcher, so the output needs its own name). Without set_code the
-- code is the service's own code, else "http_<status>" or the kind (see
-- errgate.decision).
-- The default is explicit and positional: the LAST rule must be a catch-all,
-- a rule with no matcher such as { class = "unknown" }; a catch-all anywhere
-- else is an error (the rules after it could never match). Unknown keys are
-- errors, so a typo ("stauts") fails at load instead of never matching.
-- Errors are raised as "classify...: ..." strings without position.
-- Cost: kind, status and which of class_hint, code and message are present
-- are settled once per combination. The first failure of a combination
-- computes its plan: the rules whose kind and status matchers hold for it
-- and whose explicit, code and message matchers have something to look at,
-- in order, up to the first rule with no matcher left to test. The plan is
-- kept (for integer statuses 0..999 only; equal plans are one table, so
-- what is kept is an index of at most a few thousand entries) and later
-- failures test only the plan's remaining matchers (explicit, then code,
-- message, header, in the order the rules give them).
local failure = require "errgate.failure"

local classify = {}

local MATCHERS = { explicit = true, kind = true, status = true, code = true, message = true, header = true }
local OUTPUTS = { class = true, set_code = true }

local function fail(where, fmt, ...)
  error(where .. ": " .. fmt:format(...), 0)
end

local function is_status(n)
  return type(n) == "number" and n >= 100 and n <= 599 and n % 1 == 0
end

-- status_parts(where, v, out) collects {lo, hi} ranges for one status form.
local function status_parts(where, v, out, nested)
  if is_status(v) then
    out[#out + 1] = { v, v }
  elseif type(v) == "string" and v:match("^[1-5]xx$") then
    local lo = tonumber(v:sub(1, 1)) * 100
    out[#out + 1] = { lo, lo + 99 }
  elseif type(v) == "table" and v.range ~= nil then
    local r = v.range
    if type(r) ~= "table" or not is_status(r[1]) or not is_status(r[2]) or r[1] > r[2] then
      fail(where, "status range must be {low, high} with 100 <= low <= high <= 599")
    end
    out[#out + 1] = { r[1], r[2] }
  elseif type(v) == "table" and not nested and #v > 0 then
    for _, e in ipairs(v) do status_parts(where, e, out, true) end
  else
    fail(where, "status %s not understood (want 503, {408, 429}, {range = {500, 599}} or \"5xx\")", tostring(v))
  end
  return out
end

-- in_ranges(ranges, s) -> s (a number or nil) lies in one of the ranges
local function in_ranges(ranges, s)
  if not s then return false end
  for i = 1, #ranges do
    if s >= ranges[i][1] and s <= ranges[i][2] then return true end
  end
  return false
end

local function compile_kind(where, v)
  local set = {}
  for _, k in ipairs(type(v) == "table" and v or { v }) do
    if not failure.KINDS[k] then fail(where, "kind %s unknown (%s)", tostring(k), failure.KIND_LIST) end
    set[k] = true
  end
  if next(set) == nil then fail(where, "kind list is empty") end
  return set
end

local function compile_header(where, v)
  if type(v) ~= "table" or type(v[1]) ~= "string" or (v[2] ~= nil and type(v[2]) ~= "string") then
    fail(where, "header must be {name} or {name, value}")
  end
  local hname, hvalue = v[1], v[2]
  return function(_, record)
    local h = record and record.headers
    local got = type(h) == "table" and h[hname] or nil
    if hvalue == nil then return got ~= nil end
    return got == hvalue
  end
end

-- compile_rule(i, rule) -> { kinds, ranges, explicit, rest = {fn...}, class,
-- code, header, needs_code, needs_message }: kinds (set) and ranges (status
-- {lo, hi} list) are nil when the rule has no such matcher; explicit (the
-- failure has a class_hint) is tested first, then rest, its other matchers
-- as functions of (failure, record); needs_code and needs_message: a code
-- or message matcher, which fails when the failure has none.
local function compile_rule(i, rule)
  local where = ("classify rule %d"):format(i)
  if type(rule) ~= "table" then fail(where, "expected a table, got %s", type(rule)) end
  for k in pairs(rule) do
    if not MATCHERS[k] and not OUTPUTS[k] then fail(where, "unknown key %s", tostring(k)) end
  end
  local r = { rest = {}, class = rule.class, code = rule.set_code, explicit = rule.explicit == true,
              header = rule.header ~= nil, needs_code = rule.code ~= nil, needs_message = rule.message ~= nil }
  if rule.explicit ~= nil and rule.explicit ~= true then fail(where, "explicit must be true") end
  if r.explicit then
    if rule.class ~= nil then fail(where, "an explicit rule takes its class from the failure; drop class") end
  elseif type(rule.class) ~= "string" or rule.class == "" then
    fail(where, "needs a class (a non-empty string)")
  end
  if rule.set_code ~= nil and (type(rule.set_code) ~= "string" or rule.set_code == "") then
    fail(where, "set_code must be a non-empty string")
  end
  if rule.kind ~= nil then r.kinds = compile_kind(where, rule.kind) end
  if rule.status ~= nil then r.ranges = status_parts(where, rule.status, {}) end
  if rule.code ~= nil then
    local pat = rule.code
    if type(pat) ~= "string" then fail(where, "code must be a Lua pattern string") end
    local ok, err = pcall(string.find, "", pat)
    if not ok then fail(where, "code pattern %q: %s", pat, tostring(err)) end
    r.rest[#r.rest + 1] = function(f) return f.code ~= nil and f.code:find(pat) ~= nil end
  end
  if rule.message ~= nil then
    local sub = rule.message
    if type(sub) ~= "string" or sub == "" then fail(where, "message must be a non-empty string") end
    r.rest[#r.rest + 1] = function(f) return f.message ~= nil and f.message:find(sub, 1, true) ~= nil end
  end
  if rule.header ~= nil then r.rest[#r.rest + 1] = compile_header(where, rule.header) end
  return r
end

-- catch_all(r) -> the compiled rule has no matcher at all
local function catch_all(r)
  return not r.kinds and not r.ranges and not r.explicit and #r.rest == 0
end

-- presence bits of a plan's key
local HINT, CODE, MESSAGE = 1, 2, 4

-- plan_of(compiled, kind, s, has, shared) -> the rules that can match a
-- failure of this kind and status whose class_hint, code and message are
-- present as the bits of has say, in order, ending at the first without a
-- matcher left. When that is the first rule, plan.sure is set and
-- plan.class, plan.code are its answer. Equal plans are the same table
-- (shared: rule indices -> plan).
local function plan_of(compiled, kind, s, has, shared)
  local plan, picked = {}, {}
  for i = 1, #compiled do
    local r = compiled[i]
    if (not r.kinds or r.kinds[kind]) and (not r.ranges or in_ranges(r.ranges, s))
        and (not r.explicit or has % 2 == HINT) and (not r.needs_code or has % 4 >= CODE)
        and (not r.needs_message or has >= MESSAGE) then
      plan[#plan + 1], picked[#picked + 1] = r, i
      if not r.explicit and #r.rest == 0 then
        if #plan == 1 then plan.sure, plan.class, plan.code = true, r.class, r.code end
        break
      end
    end
  end
  local key = table.concat(picked, ",")
  local same = shared[key]
  if same then return same end
  shared[key] = plan
  return plan
end

local function compile_rules(rules)
  if #rules == 0 then fail("classify", "needs at least one rule (the last one a catch-all)") end
  for k in pairs(rules) do
    if type(k) ~= "number" then fail("classify", "rules are a list; unexpected key %s", tostring(k)) end
  end
  local compiled, reads_record = {}, false
  for i = 1, #rules do
    local r = compile_rule(i, rules[i])
    if catch_all(r) and i < #rules then
      fail(("classify rule %d"):format(i), "matches everything, so the rules after it never match")
    end
    compiled[i] = r
    reads_record = reads_record or r.header
  end
  if not catch_all(compiled[#compiled]) then
    fail("classify", "the last rule must be a catch-all default, e.g. { class = \"unknown\" }")
  end
  local plans = {} -- kind -> status (or NO_STATUS) -> presence bits + 1 -> plan
  for k in pairs(failure.KINDS) do plans[k] = {} end
  local NO_STATUS = plans -- any key no status can equal
  local shared = {} -- rule indices -> plan
  return function(f, record)
    local kind, s = f.kind, f.status
    local has = (f.class_hint and HINT or 0) + (f.code and CODE or 0) + (f.message and MESSAGE or 0)
    local by_status = plans[kind]
    local by_has = by_status and by_status[s or NO_STATUS]
    local plan = by_has and by_has[has + 1]
    if not plan then
      plan = plan_of(compiled, kind, s, has, shared)
      if by_status and (s == nil or (s % 1 == 0 and s >= 0 and s < 1000)) then
        by_has = by_has or {}
        by_status[s or NO_STATUS], by_has[has + 1] = by_has, plan
      end
    end
    if plan.sure then return plan.class, plan.code end
    for i = 1, #plan do
      local r = plan[i]
      local hit = not r.explicit or f.class_hint ~= nil
      if hit then
        local rest = r.rest
        for j = 1, #rest do
          if not rest[j](f, record) then hit = false; break end
        end
        if hit then
          if r.explicit then return f.class_hint, r.code or f.code end
          return r.class, r.code
        end
      end
    end
  end, reads_record
end

local function wrap_function(fn)
  return function(f, record)
    local class, code = fn(f, record)
    if class == nil or class == "" then class = "unknown" end
    if type(class) ~= "string" then
      error("invalid decision: classify returned a class of type " .. type(class), 0)
    end
    if code ~= nil and type(code) ~= "string" then
      error("invalid decision: classify returned a code of type " .. type(code), 0)
    end
    return class, code
  end
end

-- compile(spec) -> fn(failure, record) -> class, code|nil; reads_record
-- spec: a rule list (see above) or a function. failure must be normalized.
-- reads_record is true when classifying may look at the record (a function,
-- or a rule with a header matcher): errgate.policy hands the record over
-- only then.
-- Raises "classify...: ..." on a bad spec; the returned function raises
-- "invalid decision: ..." when a classify function returns wrong types.
function classify.compile(spec)
  if type(spec) == "function" then return wrap_function(spec), true end
  if type(spec) ~= "table" then
    fail("classify", "missing (want a list of rules or a function(failure, record))")
  end
  return compile_rules(spec)
end

return classify
