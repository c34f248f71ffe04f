-- errgate.redact_words — the words of redaction: the one list, for the C
-- redactor (src/lib/redact.c: every log string, every error.message lane
-- header) and the Lua one (errgate.redact: decision messages) alike.
--
-- keys: a value that follows one of these words and '=' or ':' (a closing
-- quote and spaces may come between) is replaced by "[REDACTED]":
-- `password=x`, `"api_key": "x"`. Matching ignores case. The C side matches
-- a word at a word start only (so "tokens" and "mytoken=" are left alone);
-- the Lua side anywhere (over-redaction is acceptable there).
-- schemes: when the value after a key is one of these followed by spaces
-- and a credential (`Authorization: Basic xyz`), the scheme is kept and the
-- credential redacted. Standing alone ("Bearer xyz"), C redacts the
-- credential after every scheme, Lua after "bearer" only.
--
-- Edit here only. `make` renders the lists into the C header
-- build/gen/redact_words.h (running this file as a script:
-- `luajit lua/errgate/redact_words.lua --c-header`); c/test_redact_words
-- checks that C and Lua redact every word alike. A word is lower case:
-- letters, digits, '_', '-' and '.'.
local keys = {
  "authorization",
  "password", "passwd", "passphrase", "pwd",
  "secret", "client_secret",
  "token", "access_token", "refresh_token", "id_token", "auth_token", "session_token",
  "api_key", "apikey", "api-key", "x-api-key",
  "access_key", "secret_key", "private_key",
  "credential", "credentials",
  "sasl.password", "ssl.key.password",
}

local schemes = { "bearer", "basic", "token", "digest" }

-- The C header: EG_REDACT_KEYS and EG_REDACT_SCHEMES (W("word") entries),
-- EG_REDACT_STARTS (designated initializers, ['c'] = 1, for the first
-- letters of all the words).
if ... == "--c-header" then
  local seen, starts = {}, {}
  local function entries(list)
    local out = {}
    for _, w in ipairs(list) do
      assert(w:match("^[a-z][a-z0-9_.-]*$"), "redact_words: not a lower-case word: " .. w)
      out[#out + 1] = ('W("%s")'):format(w)
      local c = w:sub(1, 1)
      if not seen[c] then
        seen[c] = true
        starts[#starts + 1] = ("['%s'] = 1"):format(c)
      end
    end
    return table.concat(out, ", ")
  end
  print("/* redact_words.h — generated from lua/errgate/redact_words.lua by make; do not edit. */")
  print("#define EG_REDACT_KEYS " .. entries(keys))
  print("#define EG_REDACT_SCHEMES " .. entries(schemes))
  print("#define EG_REDACT_STARTS " .. table.concat(starts, ", "))
end

return { keys = keys, schemes = schemes }
