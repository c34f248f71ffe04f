-- config.lua — the DLQ operations story's gateway (examples/dlq-ops/run.sh).
--
-- Orders are POSTed to a service (here the flaky handler). The shipped
-- default policy retries transient failures in place, then dead-letters
-- them (reason exhausted), and dead-letters permanent ones at once. Every
-- record of orders.dlq needs an operator's approval before it may be
-- replayed: lanes.dlq_approval writes errgate.approval: required on it, so
-- it starts pending-approval (see README.md).
-- The broker address comes from ERRGATE_BOOTSTRAP, the handler's URL from
-- ORDERS_TARGET_URL.
return {
  group = "orders",
  source = { topics = { "orders" }, ordering = "none", max_inflight = 500 },
  target = { http = { url = os.getenv("ORDERS_TARGET_URL") or "http://127.0.0.1:8080/",
                      timeout = "2s", concurrency = 16 } },
  policy = "../../policies/default.lua",
  lanes = { dlq = "{topic}.dlq", dlq_approval = true },
  commit_interval = "200ms",
}
