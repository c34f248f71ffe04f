-- config.lua — the payload protection story's gateway (examples/protect/run.sh).
--
-- Payments carry card numbers. The shipped default policy dead-letters the
-- permanent failures (HTTP 400) at once and quarantines the semantic ones
-- (422). Nobody who can read a lane may read a card: the DLQ's values are
-- encrypted (AES-256-GCM, the key ring in protect.key; its first key
-- encrypts, every key decrypts), the quarantine's card numbers and CVVs
-- are replaced by a keyed hash (equal cards still group), and a quarantined
-- payload that is not JSON becomes a pointer to its source record. Every
-- DLQ item needs an operator's approval before it is replayed.
-- The broker address comes from ERRGATE_BOOTSTRAP, the handler's URL from
-- PAYMENTS_TARGET_URL, the key file's path from PROTECT_KEY_FILE.
return {
  group = "payments",
  source = { topics = { "payments" }, ordering = "none", max_inflight = 500 },
  target = { http = { url = os.getenv("PAYMENTS_TARGET_URL") or "http://127.0.0.1:8080/",
                      timeout = "2s", concurrency = 16 } },
  policy = "../../policies/default.lua",
  lanes = {
    dlq = "{topic}.dlq",
    quarantine = "{topic}.quarantine",
    dlq_approval = true,
    protect = {
      dlq = "encrypt",
      quarantine = "mask",
      paths = { "$.card.number", "$..cvv" },
      hash = true,
      key_file = os.getenv("PROTECT_KEY_FILE") or "protect.key",
    },
  },
  commit_interval = "200ms",
}
