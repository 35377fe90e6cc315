#pragma once
// `vigil bench NAME`: benchmarks that reproduce the seeds' tables or compare against a
// baseline measured in the same run. Each benchmark takes --quick (under a minute) and
// --json FILE, prints a readable table and writes machine-readable results: parameters,
// our figures, the reference (paper or baseline) figures, and their ratios.
// Errors: exceptions (tool layer); main() prints them as one line.
#include <boost/json/object.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vigil::bench {

struct BenchOptions {
  bool quick = false;
  std::optional<std::string> json_path;
  std::vector<std::string> args;  // benchmark-specific flags, after NAME
};

// One compared figure: ours beside the reference (the seed's number, or the baseline run).
struct Figure {
  std::string name;  // e.g. "throughput"
  std::string unit;  // e.g. "MB/s"
  double ours = 0;
  double reference = 0;
  std::string reference_source;  // "baseline: plain O_DIRECT writer" or "seed 002 Table 3.5"
  bool higher_is_better = true;
  double ratio() const { return reference == 0 ? 0 : ours / reference; }
};

struct BenchReport {
  std::string name;
  boost::json::object parameters;
  std::vector<Figure> figures;
  std::vector<std::string> notes;  // targets met or missed, caveats
};

using BenchFn = std::function<BenchReport(const BenchOptions&)>;

struct BenchEntry {
  std::string summary;
  BenchFn run;
};

// All benchmarks by name (each registers itself in bench/*.cpp through this table).
const std::map<std::string, BenchEntry>& registry();

// Prints REPORT as a table and, if asked, writes it as JSON.
void publish(const BenchReport& report, const BenchOptions& options);

// Entry point used by `vigil bench`; returns the exit code.
int bench_main(const std::vector<std::string>& args);

}  // namespace vigil::bench
