-- redact_spec.lua — errgate.redact: secrets out, length capped, UTF-8 intact.
local redact = require "errgate.redact"

describe("errgate.redact.message", function()
  it("redacts bearer tokens", function()
    local m = redact.message("401 from api: Authorization: Bearer eyJhbGc.iOiJIUzI1-NiJ9== rejected", 512)
    assert.are.equal("401 from api: Authorization: Bearer [REDACTED] rejected", m)
  end)

  it("redacts password=... and similar keys, case-insensitively", function()
    assert.are.equal("login password=[REDACTED]&user=bob", redact.message("login password=hunter2&user=bob", 512))
    assert.are.equal("{\"Token\": \"[REDACTED]\"}", redact.message("{\"Token\": \"abc123\"}", 512))
  end)

  it("redacts secrets nested, in JSON quoted inside a string, and next to binary bytes", function()
    for _, case in ipairs {
      { '{"user":{"card":{"password":"hunter2"}}}', '{"user":{"card":{"password":"[REDACTED]"}}}' },
      { 'body: {\\"password\\":\\"hunter2\\",\\"a\\":1}', 'body: {\\"password\\":\\"[REDACTED]\\",\\"a\\":1}' },
      { '{\\"api_key\\": \\"k-123\\"}', '{\\"api_key\\": \\"[REDACTED]\\"}' },
    } do
      assert.are.equal(case[2], redact.message(case[1], 512))
    end
    local m = redact.message("\255\1token=abc\0password: hunter2\254", 512)
    assert.is_nil(m:find("abc", 1, true))
    assert.is_nil(m:find("hunter2", 1, true))
  end)

  it("redacts the secret words that only the C redactor knew before the shared list", function()
    for _, case in ipairs {
      { "Authorization: Basic dXNlcjpwYXNz rejected", "Authorization: Basic [REDACTED] rejected" },
      { "authorization=opaque-credential x", "authorization=[REDACTED] x" },
      { "Authorization: Digest abc, realm", "Authorization: Digest [REDACTED], realm" },
      { "access_token=abc&x=1", "access_token=[REDACTED]&x=1" },
      { "{\"client_secret\": \"abc\"}", "{\"client_secret\": \"[REDACTED]\"}" },
      { "X-Api-Key: k-123 denied", "X-Api-Key: [REDACTED] denied" },
      { "sasl.password=p4ss", "sasl.password=[REDACTED]" },
      { "passphrase: open sesame", "passphrase: [REDACTED] sesame" },
      { "private_key=MIIE", "private_key=[REDACTED]" },
      { "credentials: u1", "credentials: [REDACTED]" },
    } do
      assert.are.equal(case[2], redact.message(case[1], 512))
    end
  end)

  it("redacts the value after every word of errgate.redact_words", function()
    for _, w in ipairs(require("errgate.redact_words").keys) do
      assert.are.equal("x " .. w:upper() .. "=[REDACTED]", redact.message("x " .. w:upper() .. "=v4lue", 512))
    end
  end)

  it("redacts a lone scheme word after a secret key (no credential follows it)", function()
    assert.are.equal("Authorization: [REDACTED]", redact.message("Authorization: Bearer", 512))
  end)

  it("redacts the password of user:pass@host", function()
    assert.are.equal("cannot reach postgres://app:[REDACTED]@db:5432/x",
      redact.message("cannot reach postgres://app:s3cr3t@db:5432/x", 512))
  end)

  it("turns control characters into spaces (one header line)", function()
    assert.are.equal("a b c", redact.message("a\nb\tc", 512))
  end)

  it("truncates to the limit without splitting a UTF-8 sequence", function()
    assert.are.equal(512, #redact.message(("x"):rep(2000), 512))
    local s = ("x"):rep(511) .. "é" -- é is 2 bytes, straddling byte 512
    local m = redact.message(s, 512)
    assert.are.equal(511, #m)
    assert.are.equal(("x"):rep(511), m)
  end)

  it("gives an empty string for a non-string", function()
    assert.are.equal("", redact.message(nil, 512))
  end)
end)
