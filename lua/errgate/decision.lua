-- errgate.decision — the one shape a decision has when it leaves Lua.
--
-- Whatever produced it (a route table, a route function, a ladder), a
-- decision is finalized here before the C core sees it:
--   { action, class, code, reason, delay_ms, message }
-- and, for action "ladder" only, also
--   rung        the name of the rung to write to (its topic is
--               lanes.retry with {rung} = this name), RUNG_PATTERN, <= 32 bytes
--   rung_index  its position in the ladder (integer >= 1; retry.count of the
--               record written there)
-- action is one of ACTIONS; class, code, reason and message are strings;
-- delay_ms is a non-negative integer, meaningful for retry, hold and ladder
-- (for a ladder: the rung's delay, raised to Retry-After; a ladder or retry
-- draft must give it), 0 for every other action. Defaults: class "unknown";
-- code the service's own code, else "http_<status>" or the failure kind;
-- reason the class; hold waits HOLD_DEFAULT_MS; message the failure's
-- message (or a short description), redacted and cut to MESSAGE_MAX bytes.
-- Anything that cannot be made valid raises "invalid decision: ..." (error
-- level 0, no position) so the C core applies its fallback and logs the
-- reason verbatim.
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
decision.RUNG_MAX = 32 -- a rung name becomes part of a topic name
decision.RUNG_PATTERN = "^[A-Za-z0-9._-]+$"

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
-- Returns a fresh table of exactly the six fields above (eight for a
-- ladder: plus rung, rung_index), or raises "invalid decision: ...".
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
  if action == "ladder" then
    local rung, i = draft.rung, draft.rung_index
    if type(rung) ~= "string" or rung == "" then invalid("ladder needs a rung name") end
    if #rung > decision.RUNG_MAX or not rung:match(decision.RUNG_PATTERN) then
      invalid("rung %q must be 1 to %d of A-Z a-z 0-9 . _ -", rung, decision.RUNG_MAX)
    end
    if type(i) ~= "number" or i < 1 or i % 1 ~= 0 then
      invalid("ladder needs rung_index, an integer >= 1, got %s", tostring(i))
    end
    d.rung, d.rung_index = rung, i
  end
  if action == "retry" or action == "hold" or action == "ladder" then
    local raw = draft.delay_ms
    if raw == nil then
      if action ~= "hold" then invalid("%s needs delay_ms", action) end
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
