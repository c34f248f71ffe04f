-- config.lua — the incident story's gateway (examples/incident/run.sh runs
-- two instances of it in one group, A and B).
--
-- Payments are POSTed to a provider (here the flaky handler). The policy
-- file is the one run.sh copies into its work folder (INCIDENT_POLICY), so
-- that replacing it hot-reloads both instances. dlq_guard holds dead letters
-- once more than 1 a second arrive over 5 s. The admin endpoint listens on
-- a free port (each instance logs it) with the operator's bearer token
-- (INCIDENT_TOKEN_FILE); operator overrides go to the audit topic
-- errgate.audit (admin.audit_topic's default), which both instances read.
-- The broker address comes from ERRGATE_BOOTSTRAP, the provider's URL from
-- PAYMENTS_TARGET_URL.
return {
  group = "payments",
  source = { topics = { "payments" }, ordering = "none", max_inflight = 500 },
  target = { http = { url = os.getenv("PAYMENTS_TARGET_URL") or "http://127.0.0.1:8080/",
                      timeout = "2s", concurrency = 16 } },
  policy = os.getenv("INCIDENT_POLICY") or "policy.lua",
  lanes = { dlq = "{topic}.dlq", retry = "{topic}.retry.{rung}" },
  dlq_guard = { max_per_second = 1, window = "5s", action = "hold", cooldown = "1m" },
  -- the fix, candidate.lua in real life: decides every failure beside the
  -- live policy, never acted on (errgate ctl shadow shows the agreement)
  shadow_policy = "policy-fixed.lua",
  admin = { listen = "127.0.0.1:0", token_file = os.getenv("INCIDENT_TOKEN_FILE") },
  commit_interval = "200ms",
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
