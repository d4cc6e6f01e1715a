// forge's durable state: one SQLite file in WAL mode that several forge
// processes (proxy, launcher, verifier) read and write at once. A Store is
// the database (store_database.h: the connection, migrations, transactions,
// checkpoints) and a small class per table, each reached by an accessor:
// store->calls().AppendCalls(...), store->db().WriteTransaction(...). A Store
// object is safe to share between threads.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "store/blobs_table.h"
#include "store/calls_table.h"
#include "store/embeddings_table.h"
#include "store/rollouts_table.h"
#include "store/settings_table.h"
#include "store/store_database.h"
#include "store/store_types.h"
#include "store/verdicts_table.h"

namespace forge::store {

class Store {
 public:
  // Opening moves into the database whatever a call log left by a stopped
  // forge-proxy still holds (call_log.h); a read-only opener does it through
  // a read-write connection of its own. It also waits (up to 5 s) for a
  // running forge-proxy to move the calls it has logged so far, so a call a
  // harness saw complete is visible to whoever opens the store next.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, OpenOptions options = {});
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  int schema_version() { return db_.schema_version(); }
  const std::string& path() const { return db_.path(); }

  StoreDatabase& db() { return db_; }
  TasksTable& tasks() { return tasks_; }
  MetaTable& meta() { return meta_; }
  RolloutsTable& rollouts() { return rollouts_; }
  VerdictsTable& verdicts() { return verdicts_; }
  EmbeddingsTable& embeddings() { return embeddings_; }
  BlobsTable& blobs() { return blobs_; }
  CallsTable& calls() { return calls_; }

  // Sizes after a checkpoint into the database file.
  Result<StoreStats> Stats();

 private:
  Store(Database db, int busy_timeout_ms);

  // The connection first: the tables (and the statements they keep
  // prepared) are destroyed before it closes.
  StoreDatabase db_;
  TasksTable tasks_{db_};
  MetaTable meta_{db_};
  RolloutsTable rollouts_{db_};
  VerdictsTable verdicts_{db_};
  EmbeddingsTable embeddings_{db_};
  BlobsTable blobs_{db_};
  CallsTable calls_{db_, blobs_};
};

}  // namespace forge::store
