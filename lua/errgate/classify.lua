-- errgate.classify — from a failure to a (class, code) pair.
--
-- A policy classifies either with a function(failure, record) -> class, code
-- or, more usually, with an ordered list of rules; the first rule whose
-- matchers all hold wins. Matchers (all optional, combined with AND):
--   explicit = true      the service named the class (Error-Class header or
--                        JSON body): class = failure.class_hint
--   kind = "connect"     failure kind, or a list of kinds (http, timeout,
--                        connect, lua, circuit_open: the C core did not send
--                        the record because the target's breaker is open)
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

local function compile_status(where, v)
  local ranges = status_parts(where, v, {})
  return function(f)
    local s = f.status
    if not s then return false end
    for i = 1, #ranges do
      if s >= ranges[i][1] and s <= ranges[i][2] then return true end
    end
    return false
  end
end

local function compile_kind(where, v)
  local set = {}
  for _, k in ipairs(type(v) == "table" and v or { v }) do
    if not failure.KINDS[k] then fail(where, "kind %s unknown (%s)", tostring(k), failure.KIND_LIST) end
    set[k] = true
  end
  if next(set) == nil then fail(where, "kind list is empty") end
  return function(f) return set[f.kind] == true end
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

-- compile_rule(i, rule) -> { test = {fn...}, explicit, class, code }
local function compile_rule(i, rule)
  local where = ("classify rule %d"):format(i)
  if type(rule) ~= "table" then fail(where, "expected a table, got %s", type(rule)) end
  for k in pairs(rule) do
    if not MATCHERS[k] and not OUTPUTS[k] then fail(where, "unknown key %s", tostring(k)) end
  end
  local r = { test = {}, class = rule.class, code = rule.set_code, explicit = rule.explicit == true }
  if rule.explicit ~= nil and rule.explicit ~= true then fail(where, "explicit must be true") end
  if r.explicit then
    if rule.class ~= nil then fail(where, "an explicit rule takes its class from the failure; drop class") end
    r.test[#r.test + 1] = function(f) return f.class_hint ~= nil end
  elseif type(rule.class) ~= "string" or rule.class == "" then
    fail(where, "needs a class (a non-empty string)")
  end
  if rule.set_code ~= nil and (type(rule.set_code) ~= "string" or rule.set_code == "") then
    fail(where, "set_code must be a non-empty string")
  end
  if rule.kind ~= nil then r.test[#r.test + 1] = compile_kind(where, rule.kind) end
  if rule.status ~= nil then r.test[#r.test + 1] = compile_status(where, rule.status) end
  if rule.code ~= nil then
    local pat = rule.code
    if type(pat) ~= "string" then fail(where, "code must be a Lua pattern string") end
    local ok, err = pcall(string.find, "", pat)
    if not ok then fail(where, "code pattern %q: %s", pat, tostring(err)) end
    r.test[#r.test + 1] = function(f) return f.code ~= nil and f.code:find(pat) ~= nil end
  end
  if rule.message ~= nil then
    local sub = rule.message
    if type(sub) ~= "string" or sub == "" then fail(where, "message must be a non-empty string") end
    r.test[#r.test + 1] = function(f) return f.message ~= nil and f.message:find(sub, 1, true) ~= nil end
  end
  if rule.header ~= nil then r.test[#r.test + 1] = compile_header(where, rule.header) end
  return r
end

local function compile_rules(rules)
  if #rules == 0 then fail("classify", "needs at least one rule (the last one a catch-all)") end
  for k in pairs(rules) do
    if type(k) ~= "number" then fail("classify", "rules are a list; unexpected key %s", tostring(k)) end
  end
  local compiled = {}
  for i = 1, #rules do
    local r = compile_rule(i, rules[i])
    if #r.test == 0 and i < #rules then
      fail(("classify rule %d"):format(i), "matches everything, so the rules after it never match")
    end
    compiled[i] = r
  end
  if #compiled[#compiled].test > 0 then
    fail("classify", "the last rule must be a catch-all default, e.g. { class = \"unknown\" }")
  end
  return function(f, record)
    for i = 1, #compiled do
      local r, hit = compiled[i], true
      for j = 1, #r.test do
        if not r.test[j](f, record) then hit = false; break end
      end
      if hit then
        if r.explicit then return f.class_hint, r.code or f.code end
        return r.class, r.code
      end
    end
  end
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

-- compile(spec) -> fn(failure, record) -> class, code|nil
-- spec: a rule list (see above) or a function. failure must be normalized.
-- Raises "classify...: ..." on a bad spec; the returned function raises
-- "invalid decision: ..." when a classify function returns wrong types.
function classify.compile(spec)
  if type(spec) == "function" then return wrap_function(spec) end
  if type(spec) ~= "table" then
    fail("classify", "missing (want a list of rules or a function(failure, record))")
  end
  return compile_rules(spec)
end

return classify
