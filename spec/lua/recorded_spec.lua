-- recorded_spec.lua — errgate.recorded.inbox: a foreign DLQ record read as
-- the failure it records (inbox mode), one format at a time.
local recorded = require "errgate.recorded"

-- inbox() without its body (the JSON the specs below the first few read)
local function inbox(...)
  local f = recorded.inbox(...)
  f.body = nil
  return f
end

local function be32(n)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end

local SPRING = {
  ["kafka_dlt-original-partition"] = be32(2),
  ["kafka_dlt-exception-fqcn"] = "org.springframework.kafka.listener.ListenerExecutionFailedException",
  ["kafka_dlt-exception-cause-fqcn"] = "java.lang.NullPointerException",
  ["kafka_dlt-exception-message"] = "Listener failed\nCannot invoke",
}

describe("errgate.recorded.inbox", function()
  it("takes Spring's cause class as the code, keeps the multi-line message", function()
    local f = inbox({ headers = SPRING }, "auto")
    assert.are.same({ kind = "recorded", code = "NullPointerException", message = "Listener failed\nCannot invoke" }, f)
  end)

  it("falls back to Spring's outer class without a cause", function()
    local f = recorded.inbox({ headers = { ["kafka_dlt-exception-fqcn"] = "com.acme.BadOrder" } }, "spring")
    assert.are.equal("BadOrder", f.code)
  end)

  it("reads the HTTP status a Spring HTTP exception names", function()
    local f = recorded.inbox({ headers = {
      ["kafka_dlt-exception-fqcn"] = "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable" } },
      "auto")
    assert.are.same({ "recorded", 503, "HttpServerErrorException$ServiceUnavailable" }, { f.kind, f.status, f.code })
  end)

  it("reads Connect, Streams (Throwable.toString), share-group and x-dlq-metadata", function()
    assert.are.equal("DataException", recorded.inbox({ headers = {
      ["__connect.errors.exception.class.name"] = "org.apache.kafka.connect.errors.DataException" } }, "auto").code)
    local s = recorded.inbox({ headers = {
      ["__streams.errors.exception"] = "java.lang.IllegalStateException: boom: twice",
      ["__streams.errors.message"] = "boom: twice" } }, "streams")
    assert.are.same({ "IllegalStateException", "boom: twice" }, { s.code, s.message })
    local g = inbox({ headers = { ["__dlq.errors.topic"] = "t", ["__dlq.errors.message"] = "gave up" } },
      "share-group")
    assert.are.same({ kind = "recorded", message = "gave up" }, g)
    local x = inbox({ headers = { ["x-dlq-metadata"] =
      '{"original_topic":"t","error_info":{"code":"E42","message":"m","status":422}}' } }, "x-dlq-metadata")
    assert.are.same({ kind = "recorded", code = "E42", message = "m", status = 422 }, x)
  end)

  it("prefers errgate's own headers in auto mode, and keeps its code whole", function()
    local h = { ["error.code"] = "payment.declined", ["error.status"] = "402" }
    for k, v in pairs(SPRING) do h[k] = v end
    local f = recorded.inbox({ headers = h }, "auto")
    assert.are.same({ "payment.declined", 402 }, { f.code, f.status })
  end)

  it("carries the format, outer class, origin and delivery count in the body, as failure fields", function()
    local failure = require "errgate.failure"
    local origin = { format = "spring", topic = "orders", partition = 2, offset = 4711, timestamp = 1767225600000 }
    local f = failure.normalize(recorded.inbox({ headers = SPRING }, "auto", origin))
    assert.are.same({ "spring", "org.springframework.kafka.listener.ListenerExecutionFailedException" },
      { f.format, f.exception })
    assert.are.same({ format = "spring", topic = "orders", partition = 2, offset = 4711, timestamp = 1767225600000 },
      f.original)
    local g = failure.normalize(recorded.inbox({ headers = { ["__dlq.errors.topic"] = "o",
      ["__dlq.errors.delivery.count"] = "5" } }, "auto"))
    assert.are.same({ "share-group", 5 }, { g.format, g.delivery_count })
    assert.is_nil(g.original)
  end)

  it("keeps only the origin of the dialect the record is read as, never another dialect's (issue 28)", function()
    local failure = require "errgate.failure"
    -- a Spring DLT record whose failed record carried errgate's original.topic (the recoverer copies headers):
    -- the C side reads the errgate one only when the record is read as errgate
    local copied = { format = "errgate", topic = "errgate.audit", partition = 0, offset = 1 }
    local f = failure.normalize(recorded.inbox({ headers = SPRING }, "auto", copied))
    assert.are.equal("spring", f.format)
    assert.is_nil(f.original)
    local g = failure.normalize(recorded.inbox({ headers = SPRING }, "connect",
      { format = "spring", topic = "orders" }))
    assert.is_nil(g.original)
    local own = failure.normalize(recorded.inbox({ headers = SPRING }, "auto", { format = "spring", topic = "orders" }))
    assert.are.equal("orders", own.original.topic)
  end)

  it("escapes what it writes into the body", function()
    local body = recorded.inbox({ headers = { ["kafka_dlt-exception-fqcn"] = "a.B" } }, "auto",
      { format = "spring", topic = "t", group = 'a"b\\c\n' }).body
    assert.are.equal('{"format":"spring","exception":"a.B","original":{"format":"spring","topic":"t",' ..
      '"group":"a\\u0022b\\u005cc\\u000a"}}', body)
    assert.are.equal('a"b\\c\n', require("errgate.json").decode(body).original.group)
  end)

  it("lets no foreign byte into a code: a class that is not a class name is invalid_class_name", function()
    local function code(h) return recorded.inbox({ headers = h }, "auto").code end
    for _, bad in ipairs({ "\255\254%.*+?[", "a b.C", "com..acme.X", "com.acme.", "com.1acme.X", "1X", "a.B\n",
                           "a.B\0", string.rep("a", 513), "X; DROP", "a/b.C", "\195\169.Cl" }) do
      assert.are.equal("invalid_class_name", code({ ["kafka_dlt-exception-fqcn"] = bad }), bad)
      assert.are.equal("invalid_class_name", code({ ["__connect.errors.exception.class.name"] = bad }), bad)
      assert.are.equal("invalid_class_name", code({ ["__streams.errors.exception"] = bad .. ": m" }), bad)
      assert.are.equal("invalid_class_name",
        code({ ["x-dlq-metadata"] = '{"error_info":{"exception":"' ..
          bad:gsub("[%c\"\\\128-\255]", function(c) return ("\\u%04x"):format(c:byte()) end) .. '"}}' }), bad)
      local f = require("errgate.failure").normalize(recorded.inbox({ headers = {
        ["kafka_dlt-exception-fqcn"] = bad, ["kafka_dlt-exception-cause-fqcn"] = "java.lang.X" } }, "auto"))
      assert.are.same({ "X" }, { f.code, f.exception }, "the outer class is absent, not repaired")
    end
    for _, good in ipairs({ "java.lang.NullPointerException", "a.B$C", "_x.$Y", "Single", string.rep("a", 512) }) do
      assert.are_not.equal("invalid_class_name", code({ ["kafka_dlt-exception-fqcn"] = good }), good)
    end
    assert.are.equal("invalid_code", code({ ["error.code"] = "http\n503" }))
    assert.are.equal("invalid_code", code({ ["error.code"] = string.rep("x", 129) }))
    assert.are.equal("E 42 x", code({ ["error.code"] = "E 42 x" }))
  end)

  it("keeps numbers in range: delivery count, status", function()
    local failure = require "errgate.failure"
    for _, n in ipairs({ "-1", "2147483648", string.rep("9", 400), "1.5" }) do
      local f = failure.normalize(recorded.inbox({ headers = { ["__dlq.errors.topic"] = "o",
        ["__dlq.errors.delivery.count"] = n } }, "auto"))
      assert.is_nil(f.delivery_count, n)
    end
    for _, st in ipairs({ 99, 600, -503, 1e300 }) do
      local doc = '{"error_info":{"code":"E","status":' .. st .. "}}"
      local f = recorded.inbox({ headers = { ["x-dlq-metadata"] = doc } }, "auto")
      assert.is_nil(f.status, tostring(st))
    end
  end)

  it("names a record without the format's headers inbox_unrecognized", function()
    assert.are.equal("inbox_unrecognized", recorded.inbox({ headers = SPRING }, "connect").code)
    assert.are.equal("inbox_unrecognized", recorded.inbox({ headers = { ["x-dlq-metadata"] = "[1" } }, "auto").code)
    assert.are.equal("inbox_unrecognized", recorded.inbox({}, "auto").code)
  end)

  it("reads hostile headers without raising: huge, binary, deeply nested, overflowing", function()
    local json = require("errgate.json")
    for i, h in ipairs({
      { ["kafka_dlt-exception-fqcn"] = "\255\254%.*+?[", ["kafka_dlt-exception-message"] = string.rep("A", 4194304) },
      { ["kafka_dlt-exception-cause-fqcn"] = string.rep(".", 100000), ["kafka_dlt-original-partition"] = "\1" },
      { ["x-dlq-metadata"] = string.rep("[", 100000) },
      { ["x-dlq-metadata"] = '{"original_topic":' .. string.rep("9", 5000) .. "}" },
      { ["__streams.errors.exception"] = string.rep(":", 50000) },
      { ["__connect.errors.exception.class.name"] = "", ["__connect.errors.partition"] = "-99999999999999999999" },
      { ["kafka_dlt-exception-fqcn"] = "\0\0\0", ["kafka_dlt-exception-message"] = "\0\255\n\r" },
    }) do
      local ok, f = pcall(recorded.inbox, { headers = h }, "auto")
      assert.is_true(ok, "case " .. i .. ": " .. tostring(f))
      assert.are.equal("recorded", f.kind, "case " .. i)
      assert.is_true(f.code == nil or type(f.code) == "string", "case " .. i)
      assert.is_table(json.decode(f.body), "case " .. i .. ": the body stays JSON")
    end
  end)
end)

-- Real Spring Kafka 4.1 dead letters (spec/fixtures/spring/, written by
-- spec/anchors/spring's produce-dlt and produce-retry on a real cluster):
-- each record's headers, name -> last value, as the inbox target hands them.
describe("errgate.recorded.inbox on real Spring Kafka records", function()
  local json = require "errgate.json"
  local function records(path)
    local out = {}
    for line in io.lines(path) do
      local r = json.decode(line)
      local h = {}
      for _, nv in ipairs(r.headers) do
        h[nv[1]] = (nv[2]:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end))
      end
      out[#out + 1] = { key = r.key, topic = r.topic, headers = h }
    end
    return out
  end
  local function by_key(rs, topic)
    local t = {}
    for _, r in ipairs(rs) do if r.topic == topic then t[r.key] = r end end
    return t
  end

  it("reads DeadLetterPublishingRecoverer's value, key and listener failures", function()
    local r = by_key(records("spec/fixtures/spring/dlt.jsonl"), "sp-dlt")
    local f = recorded.inbox(r["k2"], "auto")
    assert.are.same({ "IllegalStateException", "Listener failed; order k2 rejected" }, { f.code, f.message })
    assert.matches('"format":"spring"', f.body, 1, true)
    assert.matches('"exception":"org.springframework.kafka.listener.ListenerExecutionFailedException"', f.body, 1, true)
    f = recorded.inbox(r["k3"], "auto")
    assert.are.same({ "TimeoutException", "Listener failed; inventory service did not answer in 30000 ms" },
      { f.code, f.message })
    -- a key that did not deserialize: the key exception's headers (the cause header is shared)
    f = recorded.inbox(r["badkey-4"], "auto")
    assert.are.same({ "DeserializationException", "failed to deserialize" }, { f.code, f.message })
    assert.matches('"exception":"org.springframework.kafka.support.serializer.DeserializationException"', f.body, 1,
      true)
    f = recorded.inbox(r["k5"], "auto")
    assert.are.same({ "DeserializationException", "failed to deserialize" }, { f.code, f.message })
  end)

  it("reads x-dlq-metadata's error_info as errgate's profile writes it now: one string", function()
    local f = recorded.inbox({ headers = { ["x-dlq-metadata"] =
      '{"original_topic":"t","original_timestamp":"1767225600000","error_info":"http_503: Service: down"}' } }, "auto")
    assert.are.same({ "http_503", "Service: down" }, { f.code, f.message })
    f = recorded.inbox({ headers = { ["x-dlq-metadata"] = '{"original_topic":"t","error_info":"timeout"}' } }, "auto")
    assert.are.same({ "timeout" }, { f.code, f.message })
    f = recorded.inbox({ headers = { ["x-dlq-metadata"] = '{"original_topic":"t","error_info":"a b: c"}' } }, "auto")
    assert.are.equal(recorded.INVALID_CLASS, f.code)
  end)

  it("reads @RetryableTopic's kafka_exception-* and counts deliveries from retry_topic-attempts", function()
    local rs = records("spec/fixtures/spring/retry.jsonl")
    local seen = {}
    for _, r in ipairs(rs) do
      local f = recorded.inbox(r, "auto")
      assert.are.equal("IllegalStateException", f.code)
      assert.are.equal("Listener failed; payment for r2 declined", f.message)
      seen[#seen + 1] = r.topic .. ":" .. tostring(json.decode(f.body).delivery_count)
    end
    assert.are.same({ "rt2-retry:1", "rt2-retry:2", "rt2-dlt:3" }, seen)
  end)
end)
