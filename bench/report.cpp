#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "bench/bench.hpp"

namespace vigil::bench {
namespace {

// Parameters as a reader wants them: 4 rather than 4E0, strings without quotes.
std::string readable(const boost::json::value& v) {
  if (v.is_double()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get_double());
    return buf;
  }
  if (v.is_string()) return std::string(v.get_string());
  return boost::json::serialize(v);
}

}  // namespace

void publish(const BenchReport& report, const BenchOptions& options) {
  std::printf("\n%s\n", report.name.c_str());
  for (const auto& [k, v] : report.parameters) {
    std::printf("  %-22s %s\n", std::string(k).c_str(), readable(v).c_str());
  }
  std::printf("\n  %-44s %14s %14s %8s  %s\n", "figure", "ours", "reference", "ratio", "reference is");
  for (const auto& f : report.figures) {
    std::string label = f.name + " (" + f.unit + ")";
    std::printf("  %-44s %14.3f %14.3f %8.3f  %s\n", label.c_str(), f.ours, f.reference, f.ratio(),
                f.reference_source.c_str());
  }
  for (const auto& n : report.notes) std::printf("  note: %s\n", n.c_str());
  std::fflush(stdout);

  if (!options.json_path) return;
  boost::json::array figures;
  for (const auto& f : report.figures) {
    figures.push_back(boost::json::object{{"name", f.name},
                                          {"unit", f.unit},
                                          {"ours", f.ours},
                                          {"reference", f.reference},
                                          {"reference_source", f.reference_source},
                                          {"ratio", f.ratio()},
                                          {"higher_is_better", f.higher_is_better}});
  }
  boost::json::array notes;
  for (const auto& n : report.notes) notes.push_back(boost::json::string(n));
  boost::json::object doc{{"benchmark", report.name},
                          {"quick", options.quick},
                          {"parameters", report.parameters},
                          {"figures", std::move(figures)},
                          {"notes", std::move(notes)}};
  std::ofstream out(*options.json_path);
  if (!out) throw std::runtime_error("cannot write " + *options.json_path);
  out << boost::json::serialize(doc) << "\n";
}

int bench_main(const std::vector<std::string>& args) {
  auto usage = [] {
    std::cerr << "Usage: vigil bench NAME [--quick] [--json FILE] [benchmark options]\n\nBenchmarks:\n";
    for (const auto& [name, e] : registry()) std::cerr << "  " << name << "  " << e.summary << "\n";
  };
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    usage();
    return args.empty() ? 2 : 0;
  }
  auto it = registry().find(args[0]);
  if (it == registry().end()) {
    std::cerr << "vigil bench: unknown benchmark '" << args[0] << "'\n";
    usage();
    return 2;
  }
  BenchOptions options;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--quick") {
      options.quick = true;
    } else if (args[i] == "--json" && i + 1 < args.size()) {
      options.json_path = args[++i];
    } else {
      options.args.push_back(args[i]);
    }
  }
  publish(it->second.run(options), options);
  return 0;
}

}  // namespace vigil::bench
