#include "forge-dedup/flags.h"

#include <map>

#include "dedup/defaults.h"

namespace forge::tools::dedup {
namespace {

using forge::dedup::DecisionMode;
using forge::dedup::EmbeddingKind;
using forge::dedup::IndexKind;

std::vector<cli::Flag> CompareFlags(Args& a) {
  forge::dedup::DedupOptions& o = a.options;
  return {
      {.names = "inputs", .value = "FILE", .bind = cli::Bind(o.inputs),
       .help = "JSONL files to read ('-' for stdin; default stdin)"},
      {.names = "-f,--field", .value = "PATH", .bind = cli::Bind(o.fields),
       .help = "Dotted path of a field holding the text to compare (repeatable; joined by newlines). Default: the "
               "whole record without the id field",
       .doc = R"~(Dotted path of a field whose value is compared (repeatable; a numeric part
indexes an array, e.g.
.BR messages.0.content ).
Strings are used as they are, other values as compact JSON. Default: the whole
record without its id field.)~"},
      {.names = "--id-field", .value = "PATH", .bind = cli::Bind(o.id_field), .show_default = true,
       .help = "Dotted path of the record id",
       .doc = R"~(The record's id, used in
.B \-\-dropped
(a record without one is named by
.IR file:line ).)~"},
      {.names = "--trajectories", .bind = cli::Bind(o.trajectories),
       .help = "Compare rollouts by their trajectory rendered from --store (every main call's new messages and "
               "reply, 'role: text' lines); --field text, if given, goes first",
       .doc = R"~(Compare rollouts by their trajectory rendered from
.B \-\-store
(which is then required); the record's
.B \-\-rollout\-field
names the rollout. Text of
.BR \-\-field ,
if given, goes first. A record whose rollout has no recorded calls passes
through uncompared (named by
.IR file:line ;
exit 65 at the end).)~"},
      {.names = "--rollout-field", .value = "PATH", .bind = cli::Bind(o.rollout_field), .show_default = true,
       .help = "Dotted path of the rollout id used by --trajectories",
       .doc = R"~(Dotted path of the rollout id for
.BR \-\-trajectories .)~"},
      {.names = "--rank", .value = "SPEC", .bind = cli::Bind(o.rank),
       .help = "Who survives among duplicates: ordered keys, e.g. 'success desc,reward desc,tokens asc,id asc'; "
               "missing values sort last; input order breaks ties",
       .doc = R"~(Who survives: comma\-separated
.I "field [asc|desc]"
keys, e.g.
.BR "'success desc, reward desc, tokens asc, id asc'" ;
missing values sort last. Default: input order.)~"},
      {.names = "-t,--threshold", .value = "SIMILARITY", .bind = cli::Bind(a.threshold),
       .help = "Similarity at or above which an item is a duplicate. Default " + forge::dedup::DefaultsHelp() +
               "; precomputed vectors: 0.9 (cosine; calibrate on a sample)",
       .doc = R"~(Similarity at or above which a record is a duplicate. The defaults are
calibrated (see
.BR CALIBRATION ):
0.8 for the n\-gram embedding (cosine) and 0.67 for MinHash
(Jaccard); at them, pairs of texts with up to 10\~% of their words edited
(substituted, inserted, deleted or swapped with a neighbour) are found with
recall of at least 0.95 at every edit rate, and at least 99\~% of the pairs
found are such pairs. Vectors from a model
.RB ( \-\-embed\-url ,
.BR \-\-vectors ,
.BR \-\-vector\-field )
default to 0.9, a cosine no calibration can fix for every model: run
.B forge-dedup calibrate
on a sample.)~"},
      {.names = "--report-thresholds", .value = "T1,T2,...", .bind = cli::Bind(o.report_thresholds),
       .more = [](CLI::Option& f) { f.delimiter(','); },
       .help = "Thresholds the report counts kept/dropped at (default 0.8,0.85,0.9,0.95,0.98,0.99)",
       .doc = R"~(Thresholds at which the report counts kept and dropped records, all from the
same search (default 0.8,0.85,0.9,0.95,0.98,0.99).)~"},
      {.names = "--mode", .value = "semdedup|components", .bind = cli::Bind(o.mode),
       .more = [](CLI::Option& f) {
         f.transform(CLI::CheckedTransformer(std::map<std::string, DecisionMode>{
             {"semdedup", DecisionMode::kSemDeDup}, {"components", DecisionMode::kComponents}}));
       },
       .help = "semdedup: drop an item similar to an earlier-ranked kept item (default); components: keep the "
               "best-ranked item of each connected component",
       .doc = R"~(The decision rule:
.B semdedup
(default) drops a record similar to an earlier\-ranked kept one;
.B components
keeps the best\-ranked record of each connected component of the similarity graph.)~"},
      {.names = "--index", .value = "exact|hnsw", .bind = cli::Bind(o.index),
       .more = [](CLI::Option& f) {
         f.transform(CLI::CheckedTransformer(
             std::map<std::string, IndexKind>{{"exact", IndexKind::kExact}, {"hnsw", IndexKind::kHnsw}}));
       },
       .help = "exact: blocked BLAS all-pairs search (default); hnsw: approximate, for very large sets, recall "
               "reported",
       .doc = R"~(Exact blocked search (default), or an HNSW graph for very large sets; with
.B hnsw
the report gives the recall against exact search on a sample, and the
distance kernel used (AVX2 with FMA where the CPU has them, chosen at run
time; otherwise hnswlib's own).)~"},
      {.names = "--no-exact-stage", .bind = cli::Bind(a.no_exact_stage),
       .help = "Skip the exact (normalised hash) stage",
       .doc = R"~(Skip the normalised\-hash stage.)~"},
      {.names = "--dropped", .value = "FILE", .bind = cli::Bind(o.dropped_path),
       .help = "Write dropped records' id, matched_id, score, stage, where as JSONL to FILE",
       .doc = R"~(Write one JSON line per dropped record:
.BR id ,
.B matched_id
(the kept record it duplicates),
.BR score ,
.B stage
.RB ( exact ,
.BR similar ,
or
.BR component )
and
.B where
.RI ( file:line ).)~"},
      {.names = "--report", .value = "FILE", .bind = cli::Bind(o.report_path),
       .help = "Write the JSON report to FILE (default: a table on stderr)",
       .doc = R"~(Write the report as JSON: counts, kept/dropped at each threshold, the
histogram and quantiles of each record's highest similarity to any other
record (after the exact stage), embedding provenance, search timings and, with
HNSW, recall.
Without it the report is printed as a table on standard error.)~"},
      {.names = "-q,--quiet", .bind = cli::Bind(o.quiet),
       .help = "No report table on stderr",
       .doc = "No report table on standard error."},
      {.names = "--strict", .bind = cli::Bind(o.strict),
       .help = "A malformed input line is an error (exit 65)",
       .doc = R"~(A malformed input line is an error at once (exit 65) instead of being reported
and skipped.)~"},
  };
}

std::vector<cli::Flag> EmbeddingFlags(Args& a) {
  forge::dedup::DedupOptions& o = a.options;
  return {
      {.names = "--embedding", .value = "ngram|minhash", .bind = cli::Bind(o.embedding),
       .more = [](CLI::Option& f) {
         f.transform(CLI::CheckedTransformer(std::map<std::string, EmbeddingKind>{
             {"ngram", EmbeddingKind::kNgram}, {"minhash", EmbeddingKind::kMinHash}}));
       },
       .help = "Model-free embedding: ngram (hashed character n-grams, cosine; default) or minhash (cosine = "
               "estimated Jaccard of n-gram shingles; threshold is a Jaccard)",
       .doc = R"~(Model\-free embedding when no
.B \-\-embed\-url
is given.
.B ngram
(default): hashed character n\-grams; the threshold is a cosine.
.BR minhash :
MinHash over the character n\-gram shingles, each of
.B \-\-minhash\-hashes
minimum values reduced to
.B \-\-minhash\-bits
bits and encoded as a centred one\-hot block, so that the cosine of two vectors
is the unbiased b\-bit MinHash estimate of the Jaccard similarity of the two
shingle sets (Li and K\(:onig); the threshold is then a Jaccard similarity
(0.7\(en0.8 is usual). Same search, same decision.)~"},
      {.names = "--ngram", .value = "N", .bind = cli::Bind(a.ngram),
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 64)); },
       .help = "Character n-gram length of the model-free embeddings (default " +
               std::to_string(forge::dedup::kDefaultNgramN) + " for ngram, " +
               std::to_string(forge::dedup::kDefaultMinHashN) + " for minhash)"},
      {.names = "--minhash-hashes", .value = "K", .bind = cli::Bind(o.minhash.hashes), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 1 << 16)); },
       .help = "MinHash values per text",
       .doc = R"~(Hash values per text; the dimension is
.IR K \(mu2^ B .)~"},
      {.names = "--minhash-bits", .value = "B", .bind = cli::Bind(o.minhash.bits), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 8)); },
       .help = "Bits kept of each MinHash value (dim = hashes x 2^bits)"},
      {.names = "--dim", .value = "D", .bind = cli::Bind(o.ngram.dim), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, 1 << 20)); },
       .help = "Dimension of the n-gram embedding; with a raw --vectors file, the length of its rows",
       .doc = R"~(Dimension of the n\-gram embedding; with a raw
.B \-\-vectors
file, the number of floats in each row.)~"},
      {.names = "--vector-field", .value = "PATH", .bind = cli::Bind(o.vector_field),
       .help = "Compare the vectors in this field of each record (dotted path; an array of numbers, scaled to unit "
               "length) instead of embedding text",
       .doc = R"~(Compare the vectors held in this field of each record (dotted path; an array of
numbers) instead of embedding text. Each is scaled to unit length. A record
whose field is missing, not an array of numbers, of another length than the
first vector, all zeros, or not finite passes through uncompared, named by
.I file:line
and the reason (exit 65 at the end). The text (the
.B \-\-field
text, or the whole record without its id) still serves the exact stage.)~"},
      {.names = "--vectors", .value = "FILE", .bind = cli::Bind(o.vectors_path),
       .help = "Compare the vectors of this file, one row per record in input order: .npy (float32, records x "
               "dimensions) or raw float32 rows of --dim values",
       .doc = R"~(Compare the vectors of a side file, one row per record in input order
(records are the lines that parse; malformed lines have no row): a NumPy
.B .npy
file of float32 (dtype
.BR <f4 ,
C order, shape
.IR "(records, dimensions)" ),
or raw little\-endian float32 rows of
.B \-\-dim
values. A file that is missing (exit 66), not .npy and without
.B \-\-dim
(exit 64), of another dtype, in Fortran order, not two\-dimensional, of a
size that disagrees with its shape, or with another number of rows than there
are records (exit 65) is refused before anything is written, the message
naming the file. A row that is all zeros or holds a NaN or infinity passes its
record through uncompared, named by row,
.I file:line
and reason (exit 65 at the end).)~"},
      {.names = "--pairs", .value = "FILE", .bind = cli::Bind(o.pairs_path),
       .help = "Write every pair found at or above the lowest threshold as JSONL {a, b, score} (ids) to FILE",
       .doc = R"~(Write every pair found at or above the lowest threshold as a JSON line
.RB { a ,
.BR b ,
.BR score }
(the records' ids).)~"},
      {.names = "--near-misses", .value = "N", .bind = cli::Bind(o.near_misses), .show_default = true,
       .help = "calibrate: pairs shown on each side of each threshold",
       .doc = R"~(With
.BR calibrate :
pairs shown on each side of each threshold.)~"},
  };
}

std::vector<cli::Flag> SearchFlags(Args& a) {
  forge::dedup::DedupOptions& o = a.options;
  return {
      {.names = "-j,--threads", .value = "N", .bind = cli::Bind(o.search.threads),
       .more = [](CLI::Option& f) { f.check(CLI::NonNegativeNumber); },
       .help = "Search threads (default: all cores)"},
      {.names = "--tile", .value = "ROWS", .bind = cli::Bind(o.search.tile), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(16, 1 << 16)); },
       .help = "Rows per block of the exact search",
       .doc = R"~(Rows per block of the exact search; memory per thread is
.IR ROWS \(mu ROWS
floats.)~"},
      {.names = "--max-pairs", .value = "N", .bind = cli::Bind(o.search.max_pairs), .show_default = true,
       .help = "Refuse to hold more similar pairs than this (memory bound)",
       .doc = R"~(Refuse (exit 64) rather than hold more similar pairs than this; raise the
lowest threshold instead.)~"},
      {.names = "--hnsw-m", .value = "M", .bind = cli::Bind(o.hnsw.m), .show_default = true,
       .help = "HNSW links per node",
       .doc = R"~(HNSW links per node. Each record is a node of the graph, so its query starts the
base\-layer beam search at the record itself.)~"},
      {.names = "--hnsw-ef-construction", .value = "N", .bind = cli::Bind(o.hnsw.ef_construction),
       .show_default = true, .help = "HNSW build beam"},
      {.names = "--hnsw-ef", .value = "N", .bind = cli::Bind(o.hnsw.ef_search), .show_default = true,
       .help = "HNSW first query beam; doubled while its farthest member still reaches the threshold",
       .doc = R"~(HNSW first query beam; while the farthest member of the beam still reaches the
threshold, the query is repeated with twice the beam (a range query by growing k).)~"},
      {.names = "--hnsw-k", .value = "K", .bind = cli::Bind(o.hnsw.k), .show_default = true,
       .help = "Neighbours asked for per item at least"},
      {.names = "--hnsw-max-ef", .value = "N", .bind = cli::Bind(o.hnsw.max_ef), .show_default = true,
       .help = "Largest query beam"},
      {.names = "--recall-sample", .value = "N", .bind = cli::Bind(o.hnsw.recall_sample), .show_default = true,
       .help = "Items checked against exact search to report HNSW recall",
       .doc = "Records whose neighbours are checked against exact search to report HNSW recall."},
  };
}

std::vector<cli::Flag> EndpointFlags(Args& a) {
  forge::dedup::RemoteOptions& remote = a.remote;
  return {
      {.names = "--embed-url", .value = "URL", .bind = cli::Bind(remote.url),
       .help = "OpenAI-compatible embeddings endpoint (base URL, .../v1 or .../v1/embeddings); default: the "
               "model-free n-gram embedding",
       .doc = R"~(OpenAI\-compatible embeddings endpoint: a base URL, one ending in
.BR /v1 ,
or the full
.B .../v1/embeddings
(vLLM, text\-embeddings\-inference, Ollama, llama.cpp).
Requests send
.BR model ,
.B input
(a batch of texts) and
.BR "encoding_format: float" ;
vectors are renormalised to unit length.)~"},
      {.names = "--embed-model", .value = "NAME", .bind = cli::Bind(remote.model),
       .help = "Model name sent to the endpoint",
       .doc = R"~(Model name sent to the endpoint (required with
.BR \-\-embed\-url ).)~"},
      {.names = "--embed-batch", .value = "N", .bind = cli::Bind(remote.batch), .show_default = true,
       .help = "Texts per request",
       .doc = "Texts per request (32 is TEI's default limit)."},
      {.names = "--embed-concurrency", .value = "N", .bind = cli::Bind(remote.concurrency), .show_default = true,
       .help = "Requests in flight"},
      {.names = "--embed-retries", .value = "N", .bind = cli::Bind(remote.retries), .show_default = true,
       .help = "Retries of a request after 5xx, 429 or a connection failure",
       .doc = "Retries after HTTP 5xx, 429 or a connection failure, with exponential backoff from 250 ms."},
      {.names = "--embed-timeout", .value = "SECONDS", .bind = cli::Bind(remote.timeout_seconds),
       .show_default = true, .help = "Seconds per request"},
      {.names = "--embed-api-key-env", .value = "NAME", .bind = cli::Bind(a.api_key_env), .show_default = true,
       .help = "Environment variable holding a bearer token",
       .doc = "Environment variable whose value is sent as a bearer token."},
      {.names = "--store", .value = "FILE", .bind = cli::Bind(a.store_path),
       .help = "forge store (SQLite): its embeddings table caches endpoint vectors by content hash and model; "
               "--trajectories reads rollouts' calls from it",
       .doc = R"~(forge store (SQLite) whose
.B embeddings
table caches endpoint vectors by content hash (SHA\-256 of the text) and
model; a second run over the same texts sends no requests. With
.B \-\-trajectories
the rollouts' calls are read from it.)~"},
  };
}

}  // namespace

cli::FlagTable DefineFlags(CLI::App& app, Args& a, const Env&) {
  a.calibrate = app.add_subcommand(
      "calibrate",
      "Write no records: for every threshold (--report-thresholds and --threshold), one JSON line with what it "
      "keeps and drops and the --near-misses pairs scoring nearest it on either side (ids, similarity, both texts "
      "from just before their first difference); a table on stderr. Takes every option of forge-dedup");
  a.calibrate->fallthrough();
  app.require_subcommand(0, 1);
  cli::FlagTable table;
  table.Add(app, "options", CompareFlags(a));
  table.Add(app, "options", EmbeddingFlags(a));
  table.Add(app, "options", SearchFlags(a));
  table.Add(app, "options", EndpointFlags(a));
  return table;
}

}  // namespace forge::tools::dedup
