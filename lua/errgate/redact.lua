-- errgate.redact — make a failure message safe to write into a lane header.
--
-- Messages come from downstream services and may echo credentials back.
-- Before a message leaves the gateway (error.message header, decision log)
-- it is redacted, then truncated. Redaction is deliberately small and
-- conservative: bearer tokens, `key=value` / `key: value` pairs whose key
-- is a secret word (errgate.redact_words, the list shared with the C
-- redactor: password, secret, token, api_key...), and the password part
-- of `user:pass@host`. Over-redaction is acceptable; a
-- leaked secret is not. Truncation never splits a UTF-8 sequence. Input is
-- capped before any pattern runs so pattern cost stays bounded.
-- Cost: message() runs on every decision. The same messages come back again
-- and again ("HTTP 503", a service's fixed error text), so it remembers its
-- answers for short messages (a bounded table per pattern list, emptied when
-- full); a message it has not seen pays one anchored scan for control
-- characters and one plain search per stem of the secret words, and runs a
-- secret pattern only when its word is present.
local redact = {}

-- the real gsub, held before errgate.sandbox.harden() guards string methods:
-- these patterns are ours, bounded by SCAN_MAX and literal prefixes
local gsub, find, lower, sub, byte = string.gsub, string.find, string.lower, string.sub, string.byte
local concat = table.concat
local affordable = require("errgate.pattern").affordable

local MARK = "[REDACTED]"
local SCAN_MAX = 4096

-- a case-insensitive Lua pattern for a literal word: "api-key" -> "[aA][pP][iI]%-..."
local function nocase(word)
  word = word:gsub("%p", "%%%0")
  return (word:gsub("%a", function(c) return "[" .. c:lower() .. c:upper() .. "]" end))
end

-- ends_with_other(w, words) -> true when another of words is a suffix of w
local function ends_with_other(w, words)
  for _, o in ipairs(words) do
    if #o < #w and w:sub(-#o) == o then return true end
  end
  return false
end

-- The secret words in groups by their first three letters (a stem), each
-- { stem, { word, pattern }... }: one plain search for the stem rules out
-- the group's patterns. A pattern finds its word and the separator after
-- it. A word that ends with another ("client_secret", "access_token")
-- needs no pattern of its own: patterns are unanchored, so the shorter
-- word's finds its values already.
local WORDS = require "errgate.redact_words"
local STEMS, SCHEMES = {}, {}
do
  local group_of = {}
  for _, w in ipairs(WORDS.keys) do
    if not ends_with_other(w, WORDS.keys) then
      local stem = w:sub(1, 3)
      local g = group_of[stem]
      if not g then
        g = { stem }
        group_of[stem], STEMS[#STEMS + 1] = g, g
      end
      -- a closing quote may be escaped (JSON quoted inside a string: {\"password\":\"x\"})
      g[#g + 1] = { w, nocase(w) .. "\\?[\"']?%s*[=:]%s*\\?[\"']?" }
    end
  end
end
for _, w in ipairs(WORDS.schemes) do SCHEMES[w] = true end
local VALUE = "^[^%s%c&;,\"']+" -- a control byte (a NUL of binary text) ends a value too
local CREDENTIAL = "^( +)[^%s&;,\"']+"

-- redact_values(s, key) -> s with the value after each match of the key
-- pattern replaced by MARK; when that value is a scheme followed by spaces
-- and a credential ("Authorization: Basic xyz"), the credential is.
local function redact_values(s, key)
  local parts, n, init = {}, 0, 1
  while true do
    local _, e = find(s, key, init)
    if not e then break end
    local _, ve = find(s, VALUE, e + 1)
    -- a value quoted inside quoted JSON ends before the backslash of its \"
    if ve and ve > e + 1 and byte(s, ve) == 92 and byte(s, ve + 1) == 34 then ve = ve - 1 end
    if ve then
      local kept = e -- the text up to here stays
      if SCHEMES[lower(sub(s, e + 1, ve))] then
        local _, ce, spaces = find(s, CREDENTIAL, ve + 1)
        if ce then kept, ve = ve + #spaces, ce end
      end
      parts[n + 1], parts[n + 2], n = sub(s, init, kept), MARK, n + 2
      init = ve + 1
    else
      parts[n + 1], n = sub(s, init, e), n + 1
      init = e + 1
    end
  end
  if n == 0 then return s end
  parts[n + 1] = sub(s, init)
  return concat(parts)
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
  for g = 1, #STEMS do
    local group = STEMS[g]
    if find(low, group[1], 1, true) then
      for i = 2, #group do
        local key = group[i]
        if find(low, key[1], 1, true) then s = redact_values(s, key[2]) end
      end
    end
  end
  if find(s, "@", 1, true) then s = gsub(s, USERINFO, "%1:" .. MARK .. "@") end
  return s
end

-- compute(s, limit, patterns) -> redact.message(s, limit, patterns), never
-- remembered
local function compute(s, limit, patterns)
  s = redact.truncate(s, SCAN_MAX)
  -- one anchored pass (cheap) tells whether the replacing pass has work
  if not find(s, "^[^%c]*$") then s = gsub(s, "[%c]", " ") end
  s = redact.secrets(s)
  for i = 1, patterns and #patterns or 0 do
    -- the caller's patterns pass the pattern guard like a policy's own
    -- string.gsub: they may come from anywhere, and may change after define
    local pat = patterns[i]
    if type(pat) ~= "string" then error(("redact: pattern %d is a %s, not a string"):format(i, type(pat)), 0) end
    if not affordable(pat, #s) then
      error(("redact: pattern %q is too costly on a %d-byte message"):format(pat:sub(1, 60), #s), 0)
    end
    s = gsub(s, pat, MARK)
  end
  return redact.truncate(s, limit)
end

-- remembered answers: pattern list (weak) -> { limit, n, map = { message -> answer } }
local MEMO_LEN, MEMO_MAX = 256, 256 -- longest message remembered; answers per list
local memos = setmetatable({}, { __mode = "k" })
local NO_PATTERNS = {}

-- message(s, limit[, patterns]) -> string
-- The header-safe form of a message: non-strings become "", control
-- characters become spaces, secrets are redacted, then every match of the
-- policy's own patterns (checked affordable at define time, and again
-- here: a caller's pattern too costly for the message raises), and the result
-- is at most limit bytes. A pure function of its arguments, remembered for
-- short messages: patterns must not change once used (a policy's are fixed
-- by define()).
function redact.message(s, limit, patterns)
  local key = patterns or NO_PATTERNS
  local memo = memos[key]
  if memo and memo.limit == limit then
    local r = memo.map[s] -- only short strings are remembered
    if r then return r end
  end
  if type(s) ~= "string" then return "" end
  if #s > MEMO_LEN then return compute(s, limit, patterns) end
  if not memo or memo.limit ~= limit then
    memo = { limit = limit, n = 0, map = {} }
    memos[key] = memo
  end
  local r = compute(s, limit, patterns)
  if memo.n >= MEMO_MAX then memo.map, memo.n = {}, 0 end
  memo.map[s], memo.n = r, memo.n + 1
  return r
end

return redact
