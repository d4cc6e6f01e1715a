#include "forge-pack/flags.h"

#include <map>

namespace forge::tools::pack {

using forge::pack::AssemblyMode;
using forge::pack::Estimator;
using forge::pack::Format;
using forge::pack::Untrusted;

cli::FlagTable DefineFlags(CLI::App& app, Args& a, const Env&) {
  forge::pack::PackOptions& o = a.options;
  const std::map<std::string, Format> formats{{"sft-messages", Format::kSftMessages},
                                              {"sft-tokens", Format::kSftTokens},
                                              {"rl", Format::kRl},
                                              {"verl-prompts", Format::kVerlPrompts},
                                              {"llamafactory", Format::kSftImageTags}};
  const std::map<std::string, AssemblyMode> modes{{"merge", AssemblyMode::kMerge},
                                                  {"per-call", AssemblyMode::kPerCall}};
  const std::map<std::string, Estimator> estimators{
      {"grpo", Estimator::kGrpo}, {"drgrpo", Estimator::kDrGrpo}, {"rloo", Estimator::kRloo}};
  const std::map<std::string, Untrusted> untrusted{{"fail", Untrusted::kFail}, {"drop", Untrusted::kDrop}};
  cli::FlagTable table;
  table.Add(app, "options", {
      {.names = "inputs", .value = "FILE", .bind = cli::Bind(o.inputs),
       .help = "Rollout/verdict JSONL files ('-' for stdin; default stdin)"},
      {.names = "-s,--store", .value = "PATH", .bind = cli::Bind(o.stores),
       .more = [](CLI::Option& f) { f.allow_extra_args(false); },
       .help = "Store file to read recorded calls from (repeatable; first match wins)",
       .doc = "Store to read recorded calls from; repeatable."},
      {.names = "-f,--format", .value = "FORMAT", .bind = cli::Bind(o.format),
       .more = [formats](CLI::Option& f) { f.transform(CLI::CheckedTransformer(formats))->option_text("FORMAT"); },
       .help = "sft-messages (default): OpenAI messages+tools JSONL; sft-tokens: input_ids/labels/loss_mask JSONL; "
               "rl: packed safetensors micro-batches + JSONL index; verl-prompts: veRL RLHFDataset rows, one per task; "
               "llamafactory: sft-messages with <image> tags for images",
       .doc = R"~(sft\-messages (default), sft\-tokens, rl, verl\-prompts, llamafactory. A sample with
images: sft\-messages writes TRL's form (image parts {"type": "image"} and an
images column), llamafactory "<image>" tags in the text and the images column,
sft\-tokens and rl the image files and their placeholders' [offset, length].)~"},
      {.names = "-m,--mode", .value = "MODE", .bind = cli::Bind(o.mode),
       .more = [modes](CLI::Option& f) { f.transform(CLI::CheckedTransformer(modes))->option_text("MODE"); },
       .help = "merge (default): one sample per chain of calls whose prompt extends the previous prompt+completion; "
               "per-call: one sample per call",
       .doc = R"~(merge (default) or per\-call.)~"},
      {.names = "--passed-only", .bind = cli::Bind(o.passed_only),
       .help = "Keep only rollouts whose verdict passed"},
      {.names = "--min-reward", .value = "X", .bind = cli::Bind(a.min_reward),
       .help = "Keep only rollouts with reward >= X",
       .doc = R"~(Keep only rollouts with reward \(>= X.)~"},
      {.names = "--untrusted", .value = "fail|drop", .bind = cli::Bind(o.untrusted),
       .more = [untrusted](CLI::Option& f) { f.transform(CLI::CheckedTransformer(untrusted))->option_text("fail|drop"); },
       .help = "A rollout whose verdict is neither passed nor failed (tampered, infra_error, ...): fail (default) "
               "keeps it with reward 0, drop leaves it out; counted in --stats either way",
       .doc = R"~(A rollout whose verdict is neither passed nor failed (tampered, infra_error,
verifier_error, ...) never has a positive reward or advantage, whatever its record
says: fail (default) keeps it as a failure with reward 0, drop leaves it out.
Counted in the summary and in \-\-stats (untrusted_verdicts).)~"},
      {.names = "--min-tokens", .value = "N", .bind = cli::Bind(o.validation.min_tokens),
       .help = "Drop samples shorter than N tokens"},
      {.names = "--max-tokens", .value = "N", .bind = cli::Bind(o.validation.max_tokens),
       .help = "Drop samples longer than N tokens"},
      {.names = "--stop-id", .value = "ID", .bind = cli::Bind(a.stop_ids),
       .more = [](CLI::Option& f) { f.allow_extra_args(false); },
       .help = "Token id that may end a sample (repeatable; default: trust finish_reason)",
       .doc = R"~(Token id that may end a sample; repeatable. Without it the finish reason of the
last call is trusted.)~"},
      {.names = "--require-logprobs", .bind = cli::Bind(o.validation.require_logprobs),
       .help = "Drop samples with a completion token lacking a recorded logprob"},
      {.names = "--advantage", .value = "grpo|drgrpo|rloo", .bind = cli::Bind(o.estimator),
       .more = [estimators](CLI::Option& f) {
         f.transform(CLI::CheckedTransformer(estimators))->option_text("ESTIMATOR");
       },
       .help = "rl: grpo (default) (r-mean)/(std+1e-6); drgrpo r-mean; rloo r - mean of the others",
       .doc = R"~(GRPO (default): (r \- mean) / (std + 1e\-6), std with Bessel's correction; Dr. GRPO:
r \- mean; RLOO: r \- mean of the other rollouts of the group. A group of one
has mean 0 and std 1, as in veRL.)~"},
      {.names = "--drop-zero-variance", .bind = cli::Bind(o.drop_zero_variance),
       .help = "rl: drop groups whose rewards are all equal",
       .doc = "Drop groups (of two or more) whose rewards are all equal."},
      {.names = "--max-staleness", .value = "N", .bind = cli::Bind(a.max_staleness),
       .more = [](CLI::Option& f) { f.check(CLI::NonNegativeNumber); },
       .help = "rl: drop samples whose oldest policy version is more than N behind",
       .doc = R"~(Drop samples whose oldest policy version is more than N behind
.B \-\-policy\-version
(default: the newest policy_version_end recorded).)~"},
      {.names = "--policy-version", .value = "N", .bind = cli::Bind(a.policy_version),
       .help = "rl: current policy version for --max-staleness (default: newest recorded)",
       .doc = R"~(The current policy version that
.B \-\-max\-staleness
counts from (default: the newest policy_version_end recorded).)~"},
      {.names = "--token-budget", .value = "N", .bind = cli::Bind(o.token_budget), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::PositiveNumber); },
       .help = "rl: tokens per packed micro-batch",
       .doc = "Tokens per micro\\-batch."},
      {.names = "-o,--out-dir", .value = "DIR", .bind = cli::Bind(o.out_dir),
       .help = "rl: directory for the safetensors files",
       .doc = "Where rl writes its files (created if missing). Required for rl."},
      {.names = "--images-dir", .value = "DIR", .bind = cli::Bind(o.images_dir),
       .help = "Where samples' images are written, once each, as HASH.png (default: OUT_DIR/images)",
       .doc = R"~(Where the samples' images are written, once a run each, as files named by their
SHA\-256, with images.json (each image's original and processed size, and the
processor). Default: OUT_DIR/images. A sample with images is dropped
(no_images_dir) when there is neither.)~"},
      {.names = "--processor", .value = "SPEC", .bind = cli::Bind(a.processor),
       .help = "VL processor whose placeholders the recorded ids are checked against: FAMILY[,key=value...], "
               "JSON, or a file (qwen2-vl, qwen2.5-vl, qwen3-vl)",
       .doc = R"~(The vision\-language processor the model server used: FAMILY[,key=value...]
(qwen2\-vl, qwen2.5\-vl, qwen3\-vl; keys patch_size, merge_size, min_pixels,
max_pixels, image_token_id, vision_start_id, vision_end_id), a JSON object, or a
file holding one (images.json). Each image's placeholder count comes from its
size by the family's resize rule; a sample whose recorded ids (or the server's
placeholder ranges) do not match is dropped as image_tokens_mismatch.)~"},
      {.names = "--write-threads", .value = "N", .bind = cli::Bind(o.write_threads), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 64)); },
       .help = "rl: files written side by side",
       .doc = R"~(rl: safetensors files written side by side. Each file is laid out
in memory and written with one write() to a temporary, then renamed.)~"},
      {.names = "--stats", .value = "FILE", .bind = cli::Bind(o.stats_path),
       .help = "Write run metrics as JSON to FILE",
       .doc = R"~(Write the run's metrics as JSON: samples per rollout, merge ratio (calls per
sample), trainable\-token ratio, boundary counts, drops by reason, packing
figures (batches, utilisation, padding waste, ideal batches), and wall
seconds per stage (read, assemble, plan, write, total).)~"},
      {.names = "--data-source", .value = "NAME", .bind = cli::Bind(o.data_source), .show_default = true,
       .help = "verl-prompts: data_source column",
       .doc = "verl\\-prompts: the data_source column."},
      {.names = "--strict", .bind = cli::Bind(o.strict),
       .help = "A malformed input line is an error (exit 65) instead of skipped",
       .doc = "A malformed input line is an error instead of being reported and skipped."},
      {.names = "-q,--quiet", .bind = cli::Bind(o.quiet),
       .help = "No summary on stderr",
       .doc = "No summary on standard error."},
  });
  return table;
}

}  // namespace forge::tools::pack
