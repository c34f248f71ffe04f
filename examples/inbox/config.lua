-- config.lua — errgate as the processor of a Spring Kafka dead-letter topic
-- (examples/inbox/run.sh). The source is the DLT Spring's
-- DeadLetterPublishingRecoverer wrote (orders.DLT: the original topic plus
-- ".DLT"); `inbox = "spring"` makes each record a recorded failure read from
-- its kafka_dlt-* headers, triaged by policy.lua, with no target called.
-- Replays wait on orders.DLT.retry.replay (lanes.retry with {rung} =
-- "replay"). The broker address comes from ERRGATE_BOOTSTRAP.
return {
  group = "orders-dlt-triage",
  source = { topics = { "orders.DLT" }, inbox = "spring" },
  policy = "policy.lua",
  lanes = { dlq = "orders.dlq", quarantine = "orders.quarantine" },
  commit_interval = "200ms",
}
