// The store's small tables, each through its own class: what is put is what
// is read back, a second put replaces the first, and a key never put reads
// as nothing (not an error).
#include <doctest/doctest.h>

#include <optional>
#include <tuple>

#include "store/store.h"
#include "support/open_store.h"
#include "support/temp_dir.h"

using forge::store::Json;
using forge::store::Store;
using forge::testing::OpenOrDie;

TEST_CASE("store tables: tasks are kept by id, replaced by a second put, and need a string id") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  REQUIRE(store->tasks().Put({{"id", "t1"}, {"instruction", "first"}}).ok());
  REQUIRE(store->tasks().Put({{"id", "t1"}, {"instruction", "second"}}).ok());
  auto task = store->tasks().Get("t1");
  REQUIRE(task.ok());
  REQUIRE(task->has_value());
  CHECK((**task)["instruction"] == "second");
  auto none = store->tasks().Get("t2");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK(store->tasks().Put({{"id", 7}}).kind() == forge::Kind::kInvalidData);
}

TEST_CASE("store tables: meta values are set, replaced and deleted") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  REQUIRE(store->meta().Set("policy_version", "3").ok());
  REQUIRE(store->meta().Set("policy_version", "4").ok());
  auto value = store->meta().Get("policy_version");
  REQUIRE(value.ok());
  CHECK(*value == std::optional<std::string>("4"));
  REQUIRE(store->meta().Delete("policy_version").ok());
  auto gone = store->meta().Get("policy_version");
  REQUIRE(gone.ok());
  CHECK_FALSE(gone->has_value());
}

TEST_CASE("store tables: a verdict's record reads back, the latest put kept, with or without a reward") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  REQUIRE(store->verdicts().Put("r1", "failed", 0.0, {{"outcome", "failed"}}).ok());
  REQUIRE(store->verdicts().Put("r1", "passed", 1.0, {{"outcome", "passed"}, {"reward", 1.0}}).ok());
  REQUIRE(store->verdicts().Put("r2", "error", std::nullopt, {{"outcome", "error"}}).ok());
  auto r1 = store->verdicts().Get("r1");
  REQUIRE(r1.ok());
  REQUIRE(r1->has_value());
  CHECK(**r1 == Json{{"outcome", "passed"}, {"reward", 1.0}});
  auto r2 = store->verdicts().Get("r2");
  REQUIRE(r2.ok());
  REQUIRE(r2->has_value());
  CHECK((**r2)["outcome"] == "error");
  auto none = store->verdicts().Get("r3");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("store tables: embeddings are kept per content hash and model") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  REQUIRE(store->embeddings().Put("m1", {{"h1", {0.5f, -1.0f, 2.0f}}, {"h2", {1.0f}}}).ok());
  REQUIRE(store->embeddings().Put("m2", {{"h1", {3.0f, 4.0f}}}).ok());
  REQUIRE(store->embeddings().Put("m1", {{"h2", {0.25f, 0.75f}}}).ok());
  auto h1 = store->embeddings().Get("h1", "m1");
  REQUIRE(h1.ok());
  CHECK(*h1 == std::optional<std::vector<float>>({0.5f, -1.0f, 2.0f}));
  auto h1_m2 = store->embeddings().Get("h1", "m2");
  REQUIRE(h1_m2.ok());
  CHECK(*h1_m2 == std::optional<std::vector<float>>({3.0f, 4.0f}));
  auto h2 = store->embeddings().Get("h2", "m1");
  REQUIRE(h2.ok());
  CHECK(*h2 == std::optional<std::vector<float>>({0.25f, 0.75f}));
  auto none = store->embeddings().Get("h3", "m1");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("store tables: a rollout's update needs it registered; a run's rollouts come by task and attempt") {
  forge::testing::TempDir dir;
  auto store = OpenOrDie(dir.File("forge.db"));
  CHECK(store->rollouts().Update("nobody", "finished", "passed", nullptr).kind() == forge::Kind::kInvalidData);
  for (auto [id, task, attempt] : {std::tuple{"b0", "b", 0}, {"a1", "a", 1}, {"a0", "a", 0}}) {
    forge::store::RolloutRow row;
    row.id = id;
    row.run_id = "run";
    row.task_id = task;
    row.attempt = attempt;
    row.harness = "react";
    REQUIRE(store->rollouts().Register(row).ok());
  }
  REQUIRE(store->rollouts().Update("a1", "finished", "passed", {{"reward", 1}}).ok());
  auto rows = store->rollouts().OfRun("run");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[0].id == "a0");
  CHECK((*rows)[0].status == "registered");
  CHECK((*rows)[0].record.is_null());
  CHECK((*rows)[1].id == "a1");
  CHECK((*rows)[1].outcome == "passed");
  CHECK((*rows)[1].record == Json{{"reward", 1}});
  CHECK((*rows)[2].id == "b0");
  auto got = store->rollouts().Get("b0");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->secret_hash.empty());
}
