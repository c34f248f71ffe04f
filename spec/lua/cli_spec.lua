-- cli_spec.lua — `errgate policy test --from-topic` without Kafka: lane
-- records (as src/commands/lane_cases.c writes them) rebuilt into cases for each
-- header profile (errgate.recorded), replayed against a policy with the
-- in-place retries followed, compared, and rendered as the table and summary
-- of errgate.cli; and `policy check --ordering` handing the ordering to the
-- lint.
local cjson = require "cjson"
local cli = require "errgate.cli"
local lint = require "errgate.lint"
local policy = require "errgate.policy"
local recorded = require "errgate.recorded"
local rt = require "errgate.runtime"

local DEFAULT = assert(rt.load_policy("policies/default.lua"))

-- lane(over) -> a lane record table: topic src.dlq, partition 0, offset 7
local function lane(over)
  local r = { lane = { topic = "src.dlq", partition = 0, offset = 7, timestamp = 1700000000000 },
              key = "k1", headers = {} }
  for k, v in pairs(over or {}) do r[k] = v end
  return r
end

-- native(e, over) -> a lane record carrying errgate's headers e
local function native(e, over)
  local r = lane(over)
  r.errgate = e
  return r
end

local function case_of(r)
  local c, why = recorded.case(r)
  assert.is_truthy(c, why)
  return c
end

local function line(r) return cjson.encode(r) end

-- candidate(route400) -> default-like policy where 400 is routed to route400
local function candidate(route400)
  return policy.define {
    name = "candidate", version = "2",
    classify = {
      { status = { 502, 503, 504 }, class = "transient" },
      { status = 400, class = "permanent" },
      { kind = "lua", class = "systemic" },
      { class = "unknown" },
    },
    retry = { transient = { attempts = 4, base = 100, jitter = "none" } },
    route = { transient = { retry = "transient", exhausted = "dlq" }, permanent = route400,
              systemic = "stop", default = "dlq" },
  }
end

describe("errgate.recorded: errgate's own lane headers", function()
  it("rebuilds the failure, the decision then, the record and the rung count", function()
    local c = case_of(native({ kind = "http", status = "429", code = "RATE", message = "slow down",
      ["retry_after_ms"] = "3000", class = "transient", action = "dlq", policy = "default@1+ab",
      reason = "exhausted", id = "src/3/41", retry_count = "2", original_topic = "src",
      original_partition = "3", original_offset = "41" }, { headers = { trace = "t-1" } }))
    assert.are.same({ kind = "http", status = 429, code = "RATE", message = "slow down", retry_after_ms = 3000 },
      c.failure)
    assert.are.same({ action = "dlq", class = "transient", code = "RATE", by = "default@1+ab", reason = "exhausted" },
      c.decided)
    assert.are.same({ topic = "src", partition = 3, offset = 41, key = "k1", headers = { trace = "t-1" } }, c.record)
    assert.are.equal(2, c.ctx.retry_count)
    assert.are.same({ "src/3/41", "src.dlq[0]@7", "errgate" }, { c.id, c.lane, c.profile })
    assert.is_nil(c.rebuilt)
  end)

  it("drops a code that is only the default one (the policy derives it)", function()
    local c = case_of(native({ kind = "http", status = "400", code = "http_400", action = "dlq" }))
    assert.is_nil(c.failure.code)
    assert.are.equal("http_400", c.decided.code)
    c = case_of(native({ kind = "timeout", code = "timeout", action = "dlq" }))
    assert.are.same({ kind = "timeout" }, c.failure)
  end)

  it("pieces the failure together from error.code when error.kind is missing, and says so", function()
    local c = case_of(native({ code = "http_503", class = "transient", action = "dlq" }))
    assert.are.same({ "http", 503 }, { c.failure.kind, c.failure.status })
    assert.matches("kind from error.code", c.rebuilt)
    c = case_of(native({ code = "timeout", action = "dlq" }))
    assert.are.same({ "timeout", nil }, { c.failure.kind, c.failure.status })
    c = case_of(native({ code = "PAYMENT_DECLINED", action = "dlq" }))
    assert.are.same({ "http", "PAYMENT_DECLINED" }, { c.failure.kind, c.failure.code })
    assert.matches("guessed", c.rebuilt)
  end)

  it("takes the action from the lane's name when errgate.action is missing", function()
    local function action_on(topic)
      local c, why = recorded.case(native({ kind = "http", status = "400" },
        { lane = { topic = topic, partition = 0, offset = 0 } }))
      return c and c.decided.action or why
    end
    assert.are.equal("dlq", action_on("payments.dlq"))
    assert.are.equal("quarantine", action_on("payments.quarantine"))
    assert.are.equal("ladder", action_on("payments.retry.30s"))
    assert.are.equal("dlq", action_on("payments-dlq"))
    assert.matches("no errgate.action header, and the lane name payments.dead does not say", action_on("payments.dead"))
  end)

  it("counts the rung a ladder write climbed out of retry.count (lanes.c increments it)", function()
    assert.are.equal(1, case_of(native({ kind = "http", status = "503", action = "ladder",
      retry_count = "2" })).ctx.retry_count)
    assert.are.equal(2, case_of(native({ kind = "http", status = "503", action = "dlq",
      retry_count = "2" })).ctx.retry_count)
    assert.are.equal(0, case_of(native({ kind = "http", status = "503", action = "ladder",
      retry_count = "junk" })).ctx.retry_count)
  end)

  it("opens the breaker for a circuit_open failure, as the gateway did", function()
    local c = case_of(native({ kind = "circuit_open", action = "dlq" }))
    assert.are.equal("open", c.ctx.breaker)
  end)

  it("calls a kind it does not know unreadable, naming it", function()
    local c, why = recorded.case(native({ kind = "carrier_pigeon", action = "dlq" }))
    assert.is_nil(c)
    assert.matches('error.kind "carrier_pigeon"', why)
  end)
end)

describe("errgate.recorded: Spring Kafka DLT headers", function()
  local function spring(s, over, origin)
    local r = lane(over or { lane = { topic = "orders-dlt", partition = 1, offset = 5 } })
    r.dlq, r.origin = s, origin
    return r
  end

  it("maps the cause's exception to a Lua handler error and the original coordinates", function()
    local c = case_of(spring({
      ["kafka_dlt-exception-fqcn"] = "org.springframework.kafka.listener.ListenerExecutionFailedException",
      ["kafka_dlt-exception-cause-fqcn"] = "com.acme.orders.InvalidOrderException",
      ["kafka_dlt-exception-message"] = "order 5031 has no lines" }, nil,
      { format = "spring", topic = "orders", partition = 2, offset = 99 }))
    assert.are.same({ kind = "lua", code = "InvalidOrderException", message = "order 5031 has no lines" }, c.failure)
    assert.are.same({ action = "dlq", by = "spring-kafka" }, c.decided)
    assert.are.same({ "orders", 2, 99, "orders/2/99" }, { c.record.topic, c.record.partition, c.record.offset, c.id })
  end)

  it("surfaces an HTTP status from Spring's HTTP exception classes and messages", function()
    local function f(cls, msg) return recorded.exception_failure(cls, msg) end
    assert.are.same({ kind = "http", status = 503, message = "x" },
      f("org.springframework.web.client.HttpServerErrorException$ServiceUnavailable", "x"))
    assert.are.same({ "http", 404 },
      { f("org.springframework.web.reactive.function.client.WebClientResponseException$NotFound").kind,
      f("org.springframework.web.reactive.function.client.WebClientResponseException$NotFound").status })
    assert.are.equal(502, f("org.springframework.web.client.HttpServerErrorException",
      "502 Bad Gateway: upstream").status)
    assert.are.equal(503, f("java.lang.IllegalStateException", "payment service answered HTTP 503").status)
    assert.are.equal(429, f("java.lang.RuntimeException", "call failed with status code 429").status)
    assert.are.equal(500, f("com.acme.Boom", "upstream said HTTP/1.1 500 Internal Server Error").status)
    -- numbers that are not statuses stay in the message
    assert.are.same({ kind = "lua", code = "IllegalStateException", message = "500 items in order 5031" },
      f("java.lang.IllegalStateException", "500 items in order 5031"))
    assert.are.equal("lua", f("java.lang.RuntimeException", "status 999").kind)
  end)

  it("surfaces timeouts and refused connections", function()
    assert.are.same({ kind = "timeout", code = "SocketTimeoutException", message = "Read timed out" },
      recorded.exception_failure("java.net.SocketTimeoutException", "Read timed out"))
    assert.are.equal("timeout", recorded.exception_failure("java.util.concurrent.TimeoutException").kind)
    assert.are.equal("connect", recorded.exception_failure("java.net.ConnectException", "Connection refused").kind)
    -- Kafka Connect's ConnectException is its generic error, not a refused connection
    assert.are.same({ kind = "lua", code = "ConnectException", message = "task failed" },
      recorded.exception_failure("org.apache.kafka.connect.errors.ConnectException", "task failed"))
  end)

  it("decodes hex values and calls a record on a Spring retry topic a ladder decision", function()
    local c = case_of(spring({ ["kafka_dlt-exception-fqcn"] = { hex = "6a6176612e6c616e672e4572726f72" } },
      { lane = { topic = "orders-retry-1", partition = 0, offset = 0 } }))
    assert.are.equal("Error", c.failure.code)
    assert.are.equal("ladder", c.decided.action)
  end)

  it("needs an exception class or message", function()
    local c, why = recorded.case(spring({ ["kafka_dlt-original-topic"] = "orders" }))
    assert.is_nil(c)
    assert.matches("^no errgate, Spring Kafka, Kafka Connect, Kafka Streams, share%-group or x%-dlq%-metadata", why)
  end)
end)

describe("errgate.recorded: Kafka Streams, share-group and x-dlq-metadata headers (inbox mode's reader)", function()
  local function rec(dlq, origin)
    local r = lane({ lane = { topic = "orders.dlq", partition = 0, offset = 4 } })
    r.dlq, r.origin = dlq, origin
    return r
  end

  it("reads a Streams record's class from Throwable.toString()", function()
    local c = case_of(rec({ ["__streams.errors.exception"] = "java.lang.NullPointerException: no total",
      ["__streams.errors.message"] = "no total", ["__streams.errors.topic"] = "orders" },
      { format = "streams", topic = "orders", partition = 0, offset = 12 }))
    assert.are.same({ kind = "lua", code = "NullPointerException", message = "no total" }, c.failure)
    assert.are.same({ "streams", "orders/0/12", "kafka-streams" }, { c.profile, c.id, c.decided.by })
  end)

  it("reads a share-group record (no class, the message)", function()
    local c = case_of(rec({ ["__dlq.errors.topic"] = "orders", ["__dlq.errors.message"] = "delivery attempts exhausted",
      ["__dlq.errors.delivery.count"] = "5" },
      { format = "share-group", topic = "orders", partition = 3, offset = 77 }))
    assert.are.same({ kind = "lua", message = "delivery attempts exhausted" }, c.failure)
    assert.are.same({ "share-group", "orders/3/77", "share-group" }, { c.profile, c.id, c.decided.by })
  end)

  it("reads x-dlq-metadata's error_info, its status included", function()
    local c = case_of(rec({ ["x-dlq-metadata"] =
      '{"original_topic":"orders","error_info":{"exception":"com.acme.DuplicateKeyException","message":"dup"}}' }))
    assert.are.same({ kind = "lua", code = "DuplicateKeyException", message = "dup" }, c.failure)
    assert.are.same({ "x-dlq-metadata", "orders.dlq/0/4" }, { c.profile, c.id })
    c = case_of(rec({ ["x-dlq-metadata"] = '{"original_topic":"o","error_info":{"code":"E1","status":503}}' }))
    assert.are.same({ "http", 503 }, { c.failure.kind, c.failure.status })
  end)

  it("tries the formats in the order of auto, per record", function()
    local c = case_of(rec({ ["__streams.errors.exception"] = "a.StreamsBoom",
      ["__connect.errors.exception.class.name"] = "b.ConnectBoom" }))
    assert.are.same({ "connect", "ConnectBoom" }, { c.profile, c.failure.code })
  end)
end)

describe("errgate.recorded: Kafka Connect DLQ headers", function()
  it("maps the exception to a Lua handler error, decided dlq by Kafka Connect", function()
    local r = lane({ lane = { topic = "connect-dlq", partition = 0, offset = 3 } })
    r.dlq = { ["__connect.errors.exception.class.name"] = "org.apache.kafka.connect.errors.DataException",
              ["__connect.errors.exception.message"] = "Converting byte[] failed",
              ["__connect.errors.stage"] = "VALUE_CONVERTER" }
    r.origin = { format = "connect", topic = "orders", partition = 1, offset = 10 }
    local c = case_of(r)
    assert.are.same({ kind = "lua", code = "DataException", message = "Converting byte[] failed" }, c.failure)
    assert.are.same({ action = "dlq", by = "kafka-connect" }, c.decided)
    assert.are.same({ "orders/1/10", "connect" }, { c.id, c.profile })
  end)

  it("prefers errgate's own headers when a record carries two profiles", function()
    local r = native({ kind = "http", status = "400", action = "quarantine" })
    r.dlq = { ["__connect.errors.exception.class.name"] = "x.DataException" }
    assert.are.equal("errgate", case_of(r).profile)
  end)

  it("calls a record without any profile unreadable", function()
    local c, why, label = recorded.case(lane())
    assert.is_nil(c)
    assert.are.equal(
      "no errgate, Spring Kafka, Kafka Connect, Kafka Streams, share-group or x-dlq-metadata error headers", why)
    assert.are.equal("src.dlq[0]@7", label)
    c, why = recorded.decode("not json")
    assert.is_nil(c)
    assert.matches("^invalid JSON", why)
  end)
end)

describe("errgate.recorded.replay and diff", function()
  it("follows in-place retries until the policy gives up, as the gateway would", function()
    local c = case_of(native({ kind = "http", status = "503", class = "transient", action = "dlq",
      reason = "exhausted" }))
    local d = recorded.replay(DEFAULT, c)
    assert.are.same({ "dlq", "transient", "exhausted", 4 }, { d.action, d.class, d.reason, d.retries })
    assert.is_nil(recorded.diff(c.decided, d))
  end)

  it("stops at MAX_RETRIES for a policy that never gives up", function()
    local forever = policy.define { name = "forever", version = "1",
      classify = { { class = "transient" } },
      retry = { t = { attempts = 1000, base = 1, jitter = "none" } },
      route = { transient = { retry = "t" }, default = "dlq" } }
    local d = recorded.replay(forever, case_of(native({ kind = "http", status = "503", action = "dlq" })))
    assert.are.same({ "retry", recorded.MAX_RETRIES }, { d.action, d.retries })
  end)

  it("returns the error of a policy that raises", function()
    local raising = policy.define { name = "raising", version = "1",
      classify = function(f) if f.status == 400 then error("boom") end return "x" end,
      route = { default = "dlq" } }
    local d, err = recorded.replay(raising, case_of(native({ kind = "http", status = "400", action = "dlq" })))
    assert.is_nil(d)
    assert.matches("boom", err)
  end)

  it("names what changed, comparing the class only when it was recorded", function()
    assert.is_nil(recorded.diff({ action = "dlq", class = "permanent" }, { action = "dlq", class = "permanent" }))
    assert.are.equal("action", recorded.diff({ action = "dlq", class = "p" }, { action = "quarantine", class = "p" }))
    assert.are.equal("class", recorded.diff({ action = "dlq", class = "p" }, { action = "dlq", class = "q" }))
    assert.are.equal("action, class", recorded.diff({ action = "dlq", class = "p" }, { action = "stop", class = "q" }))
    assert.is_nil(recorded.diff({ action = "dlq" }, { action = "dlq", class = "anything" }))
  end)
end)

describe("errgate.cli.test_recorded", function()
  local records = {
    line(native({ kind = "http", status = "400", code = "http_400", class = "permanent", action = "dlq",
                  policy = "default@1+0", id = "src/0/1" })),
    line(native({ kind = "http", status = "503", class = "transient", action = "dlq", reason = "exhausted",
                  id = "src/0/2" }, { lane = { topic = "src.dlq", partition = 0, offset = 8 } })),
    line(lane({ lane = { topic = "src.dlq", partition = 0, offset = 9 } })),
  }
  local text = table.concat(records, "\n") .. "\n"

  it("exits 0 and says same when the policy agrees; unreadable records are counted", function()
    local out, code = cli.test_recorded(candidate("dlq"), text)
    assert.are.equal(0, code)
    assert.matches("\ncandidate@2: 3 records, 2 same, 0 changed, 1 unreadable$", out)
    assert.matches("^lane +errgate%.id +failure +decided then +by +would decide now +result\n", out)
    assert.matches("src%.dlq%[0%]@7 +src/0/1 +http 400 +dlq permanent +default@1%+0 +dlq permanent +same\n", out)
    assert.matches("src/0/2 +http 503 +dlq transient +%- +dlq transient %(after 4 retries%) +same\n", out)
    assert.matches("src%.dlq%[0%]@9 .* UNREADABLE no errgate", out)
  end)

  it("exits 1 and names the row when a decision changed", function()
    local out, code = cli.test_recorded(candidate("quarantine"), text)
    assert.are.equal(1, code)
    assert.matches("src/0/1 +http 400 +dlq permanent +default@1%+0 +quarantine permanent +CHANGED action\n", out)
    assert.matches(": 3 records, 1 same, 1 changed, 1 unreadable$", out)
  end)

  it("counts a policy that raises on a record as changed", function()
    local raising = policy.define { name = "raising", version = "1",
      classify = function(f) if f.status == 400 then error("boom") end return "x" end,
      route = { default = "dlq" } }
    local out, code = cli.test_recorded(raising, records[1])
    assert.are.equal(1, code)
    assert.matches("error +CHANGED the policy raised: .*boom", out)
  end)

  it("says how many rows were rebuilt from partial headers", function()
    local out = cli.test_recorded(candidate("dlq"), line(native({ code = "http_400", class = "permanent" })))
    assert.matches("same; rebuilt: kind from error.code", out)
    assert.matches("1 same, 0 changed, 0 unreadable %(1 rebuilt from partial headers%)$", out)
  end)

  it("renders an empty lane as a header and a zero summary", function()
    local out, code = cli.test_recorded(candidate("dlq"), "")
    assert.are.equal(0, code)
    assert.matches("^lane .*result\ncandidate@2: 0 records, 0 same, 0 changed, 0 unreadable$", out)
  end)

  it("aligns tables longer than unpack() could take", function()
    local rows = {}
    for i = 1, 9000 do rows[i] = { tostring(i), "x" } end
    local out = cli.table_text({ "n", "v" }, rows)
    local n = 0
    for l in out:gmatch("[^\n]+") do
      n = n + 1
      assert.are.equal(7, #l) -- "9000" is the widest first cell: 4 + 2 spaces + "x"
    end
    assert.are.equal(9001, n)
  end)
end)

describe("errgate.cli.check with an ordering", function()
  it("hands opts to the lint and says the ordering it checked", function()
    local s = spy.on(lint, "lint")
    finally(function() s:revert() end)
    local out, code = cli.check(DEFAULT, { ordering = "key" })
    assert.spy(s).was.called_with(DEFAULT, { ordering = "key" })
    assert.are.equal(0, code)
    assert.matches("\nordering  key\n", out)
  end)

  it("fails a ladder route under ordering partition", function()
    local laddered = policy.define { name = "lad", version = "1",
      classify = { { status = 503, class = "transient" }, { class = "unknown" } },
      retry = { provider = { ladder = { "30s", "5m" } } },
      route = { transient = { ladder = "provider" }, default = "dlq" } }
    local out, code = cli.check(laddered, { ordering = "partition" })
    assert.are.equal(1, code)
    assert.matches("lint      error: route 'transient' uses ladder 'provider'", out)
    assert.are.equal(0, select(2, cli.check(laddered, { ordering = "none" })))
    out, code = cli.check(laddered)
    assert.are.equal(0, code)
    assert.is_nil(out:find("\nordering "))
    -- info notes do not spoil "ok"; they follow it
    assert.matches("\nlint      ok\nlint      info: route 'transient' uses ladder 'provider'", out)
  end)
end)
