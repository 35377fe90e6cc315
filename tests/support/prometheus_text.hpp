#pragma once
// A strict reader of the Prometheus text exposition format 0.0.4 for the /metrics tests: every
// line must be a HELP, a TYPE or a sample matching the grammar; every sample's family must have
// HELP and TYPE before it; a family's samples must be contiguous; a histogram's buckets must be
// cumulative with a +Inf bucket equal to its _count. Thread: any. Errors: listed in `errors`.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vigil::test {

struct PromSample {
  std::string name;                           // as written (with _bucket/_sum/_count)
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

struct PromText {
  std::vector<std::string> errors;           // empty: the text is valid
  std::map<std::string, std::string> types;  // family → counter/gauge/histogram/...
  std::map<std::string, std::string> help;   // family → help text (unescaped)
  std::vector<PromSample> samples;

  // Samples named NAME whose labels include LABELS.
  std::vector<const PromSample*> find(const std::string& name,
                                      const std::map<std::string, std::string>& labels = {}) const;
  // The value of the single such sample; nullopt if none or several.
  std::optional<double> value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
  // The sum over every such sample.
  double sum(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
};

PromText parse_prometheus_text(const std::string& text);

}  // namespace vigil::test
