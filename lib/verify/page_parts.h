// The pieces forge-verify's two pages (html.h) share: the frame, cards,
// sections, the pass@k curves, outcome bars, behaviour charts, tables of
// counts, and the footer with the definitions and the page's provenance.
// Every text is escaped here; callers pass plain strings.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "verify/html.h"
#include "verify/svg.h"

namespace forge::verify::page {

// Tasks a page shows by name at each end (lowest and highest, losses and
// gains); the others are summarised. Groups a chart draws; groups a table lists.
inline constexpr size_t kTasksPerSide = 8;
inline constexpr size_t kGroupsDrawn = 12;
inline constexpr size_t kGroupRows = 40;

std::string Color(size_t i);
// The i-th of n colours from light to dark, for groups in an order (versions).
std::string SequentialColor(size_t i, size_t n);
// "a, b, c and 7 more".
std::string Listed(const std::vector<std::string>& items, size_t at_most);
std::string Fixed(double v, int digits = 4);
std::string PercentOrNa(std::optional<double> v);
std::string Count(int64_t n);  // 12,345

std::string Head(const std::string& title);
std::string Header(const std::string& eyebrow, const std::string& title, const std::string& subtitle);
std::string Card(const std::string& label, const std::string& value, const std::string& sub,
                 const std::string& cls = "");
std::string Section(const std::string& id, const std::string& title, const std::string& caption,
                    const std::string& body);
std::string Note(const std::string& text);

// pass@k (solid) and pass^k (dashed) against k, one colour per group, at
// most kGroupsDrawn groups (then said under the chart): the first ones, or
// for groups in an order, spread over it from the first to the last, in
// colours from light to dark.
std::string CurvesSection(const std::vector<const GroupReport*>& groups, const std::string& scope, bool ordered);
svg::StackRow OutcomeRow(const std::string& label, const TaskStats& stats);
// `scope` says which attempts the bars count.
std::string OutcomesSection(const std::vector<svg::StackRow>& rows, const std::string& scope);
// Tool use, and with `rates` the self-verification, recovery, turns and tokens.
std::string BehaviourSections(const std::vector<const GroupReport*>& groups, bool rates);
std::string BehaviourTable(const std::vector<const GroupReport*>& groups);

// The ends of a list of n items: the first `per_side` and the last
// `per_side` indices, or all of them when they do not overlap.
std::vector<size_t> Ends(size_t n, size_t per_side);

// Tables of counts: one row per task or group, with pass@k and pass^k.
std::string StatsHeader(const std::string& first, const std::vector<KValues>& ks, bool tasks_column, bool intervals);
std::string StatsRow(const std::string& name, const TaskStats& s, const std::vector<KValues>& ks, double reward,
                     std::optional<size_t> tasks, const std::vector<KIntervals>* intervals, bool total = false);
// A row spanning the table: what was left out of it.
std::string GapRow(const std::string& text, size_t columns);
// A report's tasks, the kTasksPerSide lowest and highest by pass@k at the
// first k, the rest summarised; the overall row last.
std::string TaskTable(const std::string& title, const Report& report);

// The definitions a reader needs, then where the page comes from.
std::string Footer(const Provenance& made, const std::vector<std::pair<std::string, std::string>>& facts);
// The facts every page states: the thresholds, and how trials were counted.
std::vector<std::pair<std::string, std::string>> CountingFacts(const std::vector<const Report*>& reports);

}  // namespace forge::verify::page
