-- policy.lua — triage of a Spring Kafka dead-letter topic (examples/inbox).
-- Inbox mode hands the policy each DLT record as a failure of kind
-- "recorded" whose code is the innermost exception class (Spring's
-- kafka_dlt-exception-cause-fqcn):
--   a JSON parse error (a DeserializationException's cause)  -> quarantine
--   a query timeout                                           -> back to the
--                                                                original topic
--                                                                after 5 s
--   anything else                                             -> orders.dlq,
--                                                                normalized
local policy = require "errgate.policy"

return policy.define {
  name = "orders-dlt-triage",
  version = "1",
  classify = {
    { code = "JsonParseException$", class = "poison" },
    { code = "TimeoutException$", class = "slow" },
    { class = "bug" },
  },
  route = {
    poison = "quarantine",
    slow = { replay = "original", after = "5s" },
    bug = "dlq",
    default = "dlq",
  },
  examples = {
    { failure = { kind = "recorded", code = "JsonParseException" }, expect = { action = "quarantine" } },
    { failure = { kind = "recorded", code = "QueryTimeoutException" },
      expect = { action = "replay", delay_ms = 5000 } },
    { failure = { kind = "recorded", code = "NullPointerException" }, expect = { action = "dlq", class = "bug" } },
  },
}
