-- errgate.failure — one normal form for what the target reported.
--
-- The C core (or a test) hands the policy a failure table: kind ("http",
-- "timeout", "connect", "lua", "circuit_open"), status, code (Error-Code
-- header), class_hint (Error-Class header), message, retry_after_ms,
-- latency_ms, body (<= 4 KiB). "circuit_open" is not an answer from the
-- target: the C core did not send the record because the target's circuit
-- breaker is open, and asks the policy what to do instead (message
-- "circuit open", no status; ctx.breaker says "open").
-- normalize() returns a fresh table (the caller's table may be reused by C
-- and is never modified) with types checked, strings capped so later pattern
-- matching stays cheap, and the body mined for a structured error: a JSON
-- object `{"error": {"class": ..., "code": ..., "message": ...}}` fills
-- class_hint, code and message where headers did not already set them
-- (headers win: they are the service's deliberate answer). `"error": "text"`
-- fills message only. Normalizing twice gives the same result.
local cjson = require "cjson.safe"

local failure = {}

-- failure.KINDS: the kinds of failure a target (or the breaker) can report.
failure.KINDS = { http = true, timeout = true, connect = true, lua = true, circuit_open = true }
-- failure.KIND_LIST: the same, in a stable order for messages.
failure.KIND_LIST = "http, timeout, connect, lua, circuit_open"

local CAP = { code = 128, class_hint = 64, message = 4096, body = 4096 }

local function str(v, cap)
  if type(v) == "number" then v = tostring(v) end
  if type(v) ~= "string" or v == "" then return nil end
  return #v > cap and v:sub(1, cap) or v
end

local function num(v)
  v = tonumber(v)
  if v == nil or v ~= v then return nil end
  return v
end

-- body_error(body) -> class, code, message (each string or nil)
-- The structured error in a JSON response body, if there is one.
function failure.body_error(body)
  if type(body) ~= "string" or not body:find("^%s*{") then return nil end
  local doc = cjson.decode(body)
  if type(doc) ~= "table" then return nil end
  local e = doc.error
  if type(e) == "string" then return nil, nil, str(e, CAP.message) end
  if type(e) ~= "table" then return nil end
  return str(e.class, CAP.class_hint), str(e.code, CAP.code), str(e.message, CAP.message)
end

-- normalize(f) -> failure
-- A fresh, checked copy of f. Raises "invalid failure: ..." when f is not a
-- table or its kind is unknown. Fields: kind, status (number|nil), code,
-- class_hint, message, body (string|nil, capped), retry_after_ms (number|nil,
-- >= 0), latency_ms (number, default 0).
function failure.normalize(f)
  if type(f) ~= "table" then
    error("invalid failure: expected a table, got " .. type(f), 0)
  end
  if not failure.KINDS[f.kind] then
    error("invalid failure: unknown kind " .. tostring(f.kind) .. " (" .. failure.KIND_LIST .. ")", 0)
  end
  local n = {
    kind = f.kind,
    status = num(f.status),
    code = str(f.code, CAP.code),
    class_hint = str(f.class_hint, CAP.class_hint),
    message = str(f.message, CAP.message),
    body = str(f.body, CAP.body),
    retry_after_ms = num(f.retry_after_ms),
    latency_ms = num(f.latency_ms) or 0,
  }
  if n.retry_after_ms and n.retry_after_ms < 0 then n.retry_after_ms = nil end
  if n.body and not (n.class_hint and n.code and n.message) then
    local class, code, message = failure.body_error(n.body)
    n.class_hint = n.class_hint or class
    n.code = n.code or code
    n.message = n.message or message
  end
  return n
end

-- default_code(f) -> string
-- The code a failure gets when neither the policy nor the service named one:
-- "http_503" for an HTTP status, otherwise the kind ("timeout", "connect",
-- "lua", "circuit_open").
function failure.default_code(f)
  if f.kind == "http" and f.status then return ("http_%d"):format(math.floor(f.status)) end
  return f.kind
end

-- describe(f) -> string
-- A short human description used when the failure carries no message:
-- "HTTP 503", "timeout after 5000 ms", "connection failed", "circuit open",
-- "lua error".
function failure.describe(f)
  if f.kind == "http" then
    return f.status and ("HTTP %d"):format(math.floor(f.status)) or "HTTP error"
  elseif f.kind == "timeout" then
    return ("timeout after %d ms"):format(f.latency_ms or 0)
  elseif f.kind == "connect" then
    return "connection failed"
  elseif f.kind == "circuit_open" then
    return "circuit open"
  end
  return "lua error"
end

return failure
