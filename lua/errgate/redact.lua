-- errgate.redact — make a failure message safe to write into a lane header.
--
-- Messages come from downstream services and may echo credentials back.
-- Before a message leaves the gateway (error.message header, decision log)
-- it is redacted, then truncated. Redaction is deliberately small and
-- conservative: bearer tokens, `key=value` / `key: value` pairs whose key
-- looks secret (password, passwd, pwd, secret, token, api_key, apikey), and
-- the password part of `user:pass@host`. Over-redaction is acceptable; a
-- leaked secret is not. Truncation never splits a UTF-8 sequence. Input is
-- capped before any pattern runs so pattern cost stays bounded.
local redact = {}

-- the real gsub, held before errgate.sandbox.harden() guards string methods:
-- these patterns are ours, bounded by SCAN_MAX and literal prefixes
local gsub, find, lower = string.gsub, string.find, string.lower

local MARK = "[REDACTED]"
local SCAN_MAX = 4096

-- a case-insensitive Lua pattern for a literal word: "token" -> "[tT][oO]..."
local function nocase(word)
  return (word:gsub("%a", function(c) return "[" .. c:lower() .. c:upper() .. "]" end))
end

local SECRET_WORDS = { "password", "passwd", "pwd", "secret", "token", "api_key", "apikey" }
local SECRET_KEYS = {}
for i, k in ipairs(SECRET_WORDS) do
  SECRET_KEYS[i] = "(" .. nocase(k) .. "[\"']?%s*[=:]%s*[\"']?)[^%s&;,\"']+"
end
local BEARER = "(" .. nocase("bearer") .. "%s+)[%w%-%._~%+/]+=*"
local USERINFO = "([%w%._~%%!%$'%*%+%-]+):[^%s@/:]+@"

-- truncate(s, limit) -> string
-- s cut to at most limit bytes, backing off so no UTF-8 sequence is split.
function redact.truncate(s, limit)
  if #s <= limit then return s end
  local cut = limit
  -- a continuation byte (10xxxxxx) at cut+1 means we are inside a sequence
  while cut > 0 and s:byte(cut + 1) and s:byte(cut + 1) >= 0x80 and s:byte(cut + 1) < 0xC0 do
    cut = cut - 1
  end
  return s:sub(1, cut)
end

-- secrets(s) -> string
-- s with the secrets described above replaced by "[REDACTED]".
function redact.secrets(s)
  -- each pattern needs its keyword (or '@'): a plain search of the lowered
  -- text first skips the patterns that cannot match, which is most of them
  local low = lower(s)
  if find(low, "bearer", 1, true) then s = gsub(s, BEARER, "%1" .. MARK) end
  for i = 1, #SECRET_KEYS do
    if find(low, SECRET_WORDS[i], 1, true) then s = gsub(s, SECRET_KEYS[i], "%1" .. MARK) end
  end
  if find(s, "@", 1, true) then s = gsub(s, USERINFO, "%1:" .. MARK .. "@") end
  return s
end

-- message(s, limit[, patterns]) -> string
-- The header-safe form of a message: non-strings become "", control
-- characters become spaces, secrets are redacted, then every match of the
-- policy's own patterns (checked affordable at define time), and the result
-- is at most limit bytes.
function redact.message(s, limit, patterns)
  if type(s) ~= "string" then return "" end
  s = redact.secrets((gsub(redact.truncate(s, SCAN_MAX), "[%c]", " ")))
  for i = 1, patterns and #patterns or 0 do s = gsub(s, patterns[i], MARK) end
  return redact.truncate(s, limit)
end

return redact
