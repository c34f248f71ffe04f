-- errgate.decision — the one shape a decision has when it leaves Lua.
--
-- Whatever produced it (a route table, a route function, a future ladder),
-- a decision is finalized here before the C core sees it:
--   { action, class, code, reason, delay_ms, message }
-- action is one of ACTIONS; class, code, reason and message are strings;
-- delay_ms is a non-negative integer (meaningful for retry and hold, 0 for
-- every other action). Defaults: class "unknown"; code the service's own
-- code, else "http_<status>" or the failure kind; reason the class; hold
-- waits HOLD_DEFAULT_MS; message the failure's message (or a short
-- description), redacted and cut to MESSAGE_MAX bytes. Anything that cannot
-- be made valid raises "invalid decision: ..." (error level 0, no position)
-- so the C core applies its fallback and logs the reason verbatim.
local duration = require "errgate.duration"
local failure = require "errgate.failure"
local redact = require "errgate.redact"

local decision = {}

-- decision.ACTIONS: every action the C core understands.
decision.ACTIONS = {
  retry = true, ladder = true, dlq = true, quarantine = true,
  ignore = true, hold = true, stop = true,
}
-- decision.ACTION_LIST: the same, in a stable order for messages.
decision.ACTION_LIST = "retry, ladder, dlq, quarantine, ignore, hold, stop"
decision.HOLD_DEFAULT_MS = 1000
decision.MESSAGE_MAX = 512
decision.NAME_MAX = 128 -- class, code and reason become header values

local function invalid(fmt, ...)
  error("invalid decision: " .. fmt:format(...), 0)
end

local function name(v, field, default)
  if v == nil or v == "" then return default end
  if type(v) ~= "string" then invalid("%s must be a string, got %s", field, type(v)) end
  if #v > decision.NAME_MAX then invalid("%s longer than %d bytes", field, decision.NAME_MAX) end
  return v
end

-- finalize(draft, f[, redact_patterns]) -> decision
-- draft: table with action and optionally class, code, reason, delay_ms
-- (ms or duration string), message. f: the normalized failure it answers.
-- Returns a fresh table of exactly the six fields above, or raises
-- "invalid decision: ...".
function decision.finalize(draft, f, redact_patterns)
  if type(draft) ~= "table" then invalid("expected a table, got %s", type(draft)) end
  local action = draft.action
  if not decision.ACTIONS[action] then
    invalid("unknown action %s (want one of %s)", tostring(action), decision.ACTION_LIST)
  end
  local class = name(draft.class, "class", "unknown")
  local d = {
    action = action,
    class = class,
    code = name(draft.code, "code", nil) or f.code or failure.default_code(f),
    reason = name(draft.reason, "reason", class),
    delay_ms = 0,
  }
  if action == "retry" or action == "hold" then
    local raw = draft.delay_ms
    if raw == nil then
      if action == "retry" then invalid("retry needs delay_ms") end
      raw = decision.HOLD_DEFAULT_MS
    end
    local ms, err = duration.parse(raw)
    if not ms then invalid("delay_ms: %s", err) end
    d.delay_ms = ms
  end
  local msg = draft.message
  if msg ~= nil and type(msg) ~= "string" then invalid("message must be a string, got %s", type(msg)) end
  d.message = redact.message(msg or f.message or failure.describe(f), decision.MESSAGE_MAX, redact_patterns)
  return d
end

return decision
