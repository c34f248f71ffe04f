-- failure_spec.lua — errgate.failure: normalization and the JSON error body.
local failure = require "errgate.failure"

describe("errgate.failure.normalize", function()
  it("fills class_hint, code and message from a JSON error body", function()
    local f = failure.normalize({ kind = "http", status = 400,
      body = '{"error": {"class": "semantic", "code": "BAD_IBAN", "message": "IBAN checksum failed"}}' })
    assert.are.same({ "semantic", "BAD_IBAN", "IBAN checksum failed" }, { f.class_hint, f.code, f.message })
  end)

  it("lets headers win over the body", function()
    local f = failure.normalize({ kind = "http", status = 400, class_hint = "permanent", code = "H1",
      body = '{"error": {"class": "semantic", "code": "B1", "message": "from body"}}' })
    assert.are.same({ "permanent", "H1", "from body" }, { f.class_hint, f.code, f.message })
  end)

  it("takes a string error as the message only", function()
    local f = failure.normalize({ kind = "http", status = 500, body = '{"error": "database is down"}' })
    assert.are.equal("database is down", f.message)
    assert.is_nil(f.class_hint)
  end)

  it("turns a numeric code into a string and ignores JSON nulls", function()
    local f = failure.normalize({ kind = "http", status = 400,
      body = '{"error": {"class": null, "code": 42}}' })
    assert.are.equal("42", f.code)
    assert.is_nil(f.class_hint)
  end)

  it("ignores bodies that are not JSON objects with an error", function()
    for _, body in ipairs({ "<html>bad gateway</html>", "{not json", "[1,2]", '{"ok": false}', '"error"' }) do
      local f = failure.normalize({ kind = "http", status = 502, body = body })
      assert.is_nil(f.class_hint)
      assert.is_nil(f.code)
      assert.is_nil(f.message)
      assert.are.equal(body, f.body)
    end
  end)

  it("does not modify the caller's table", function()
    local given = { kind = "http", status = 400, body = '{"error": {"code": "X"}}' }
    local f = failure.normalize(given)
    assert.are.equal("X", f.code)
    assert.is_nil(given.code)
    assert.are_not.equal(given, f)
  end)

  it("is idempotent", function()
    local f = failure.normalize({ kind = "timeout", latency_ms = 5000, message = "slow" })
    assert.are.same(f, failure.normalize(f))
  end)

  it("caps long strings and drops a negative Retry-After", function()
    local f = failure.normalize({ kind = "http", status = 503, code = ("C"):rep(1000),
      class_hint = ("k"):rep(1000), body = ("b"):rep(10000), retry_after_ms = -5 })
    assert.are.same({ 128, 64, 4096 }, { #f.code, #f.class_hint, #f.body })
    assert.is_nil(f.retry_after_ms)
    assert.are.equal(0, f.latency_ms)
  end)

  it("refuses a non-table and an unknown kind", function()
    assert.has_error(function() failure.normalize(nil) end, "invalid failure: expected a table, got nil")
    assert.has_error(function() failure.normalize({ kind = "dns" }) end,
      "invalid failure: unknown kind dns (http, timeout, connect, lua, circuit_open, recorded)")
  end)
end)

describe("errgate.failure.fill, recorded failures", function()
  it("reads format, exception, original and delivery_count from the body, and clears them on reuse", function()
    local body = '{"format":"spring","exception":"X","delivery_count":3,"original":{"topic":"t","offset":7}}'
    local n = failure.fill(nil, "recorded", nil, "C", nil, "m", body)
    assert.are.same({ "spring", "X", 3, { topic = "t", offset = 7 } },
      { n.format, n.exception, n.delivery_count, n.original })
    failure.fill(n, "http", 503)
    assert.are.same({}, { n.format, n.exception, n.delivery_count, n.original })
  end)

  it("ignores fields of the wrong type and a body that is not JSON", function()
    local n = failure.fill(nil, "recorded", nil, nil, nil, nil, '{"format":1,"original":{"topic":2}}')
    assert.are.same({}, { n.format, n.original })
    assert.is_nil(failure.fill(nil, "recorded", nil, nil, nil, nil, "not json").format)
  end)
end)

describe("errgate.failure.default_code", function()
  it("is http_<status> for HTTP and the kind otherwise", function()
    assert.are.equal("http_503", failure.default_code({ kind = "http", status = 503 }))
    assert.are.equal("timeout", failure.default_code({ kind = "timeout" }))
    assert.are.equal("connect", failure.default_code({ kind = "connect" }))
  end)
end)
