#include "store/schema.h"

namespace forge::store {

const std::vector<std::string_view>& Migrations() {
  static const std::vector<std::string_view> kMigrations = {
      // 1: the first schema.
      R"sql(
CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  record TEXT NOT NULL,            -- the task record as JSON
  created_at REAL NOT NULL
);
CREATE TABLE rollouts (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  harness TEXT,
  secret_hash TEXT UNIQUE,         -- SHA-256 of the rollout's API key; the key itself is never stored
  status TEXT NOT NULL,            -- registered, running, finished
  outcome TEXT,
  record TEXT,                     -- the latest rollout record as JSON
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
-- Content-addressed storage: harnesses resend the whole conversation on
-- every call, so each message is stored once, keyed by its SHA-256.
CREATE TABLE blobs (
  id INTEGER PRIMARY KEY,          -- what call skeletons refer to: short, unlike the hash
  hash TEXT NOT NULL UNIQUE,       -- the digest's 32 bytes, a BLOB (64 hex digits in older stores)
  data BLOB NOT NULL
);
CREATE TABLE calls (
  id INTEGER PRIMARY KEY,
  rollout_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  started_at REAL, first_token_at REAL, ended_at REAL,
  client_format TEXT, upstream TEXT, model TEXT,
  policy_version_start INTEGER, policy_version_end INTEGER,
  request TEXT, response TEXT,                  -- skeletons whose parts are blob references
  upstream_request TEXT,                        -- a skeleton, or 'D' + the skeleton of its difference from request
  upstream_response TEXT,
  prompt_base_call INTEGER,                     -- prompt ids = base call's prompt ids[0:prefix_len] + suffix
  prompt_prefix_len INTEGER NOT NULL DEFAULT 0,
  prompt_suffix BLOB,                           -- little-endian int32
  completion_ids BLOB,                          -- little-endian int32
  logprobs BLOB,                                -- little-endian float32, one per completion id
  finish_reason TEXT, usage TEXT,
  http_status INTEGER, error TEXT,
  side_call INTEGER NOT NULL DEFAULT 0,
  retry_key TEXT,
  UNIQUE (rollout_id, seq)
);
CREATE TABLE verdicts (
  rollout_id TEXT PRIMARY KEY,
  outcome TEXT NOT NULL,
  reward REAL,
  record TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE TABLE embeddings (
  content_hash TEXT NOT NULL,
  model TEXT NOT NULL,
  dim INTEGER NOT NULL,
  vector BLOB NOT NULL,                         -- little-endian float32, unit length
  PRIMARY KEY (content_hash, model)
);
)sql",
      // 2: lookups the tools make on every call or record.
      R"sql(
CREATE INDEX rollouts_by_run ON rollouts (run_id, task_id, attempt);
CREATE UNIQUE INDEX calls_by_retry_key ON calls (rollout_id, retry_key) WHERE retry_key IS NOT NULL;
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql",
      // 3: images, each a blob of its own (content.h), and where their placeholders are.
      R"sql(
ALTER TABLE calls ADD COLUMN images BLOB;           -- the images the upstream saw, in order: 32-byte SHA-256 digests
ALTER TABLE calls ADD COLUMN mm_placeholders TEXT;  -- the upstream's placeholder ranges, as it sent them
)sql",
  };
  return kMigrations;
}

}  // namespace forge::store
