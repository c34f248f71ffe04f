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
