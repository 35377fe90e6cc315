#include "tests/support/prometheus_text.hpp"

#include <cmath>
#include <regex>
#include <set>
#include <sstream>

namespace vigil::test {
namespace {

bool name_char(char c, bool first, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

// Reads a name at POS; empty if none.
std::string read_name(const std::string& s, std::size_t& pos, bool colon_ok) {
  const std::size_t start = pos;
  while (pos < s.size() && name_char(s[pos], pos == start, colon_ok)) ++pos;
  return s.substr(start, pos - start);
}

std::optional<double> parse_value(const std::string& v) {
  static const std::regex number(R"([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)");
  if (v == "NaN") return std::nan("");
  if (v == "+Inf") return INFINITY;
  if (v == "-Inf") return -INFINITY;
  if (!std::regex_match(v, number)) return std::nullopt;
  return std::stod(v);
}

std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx = suffix;
    if (name.size() > sfx.size() && name.ends_with(sfx)) {
      auto base = name.substr(0, name.size() - sfx.size());
      if (auto it = types.find(base); it != types.end() && (it->second == "histogram" || it->second == "summary")) {
        return base;
      }
    }
  }
  return name;
}

}  // namespace

PromText parse_prometheus_text(const std::string& text) {
  PromText out;
  auto error = [&](std::size_t line_no, const std::string& line, const std::string& why) {
    out.errors.push_back("line " + std::to_string(line_no) + ": " + why + ": " + line);
  };
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  std::string current;           // the family of the previous sample
  std::set<std::string> closed;  // families whose samples ended
  if (!text.empty() && text.back() != '\n') out.errors.push_back("the text does not end with a newline");
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) {
      error(n, line, "empty line");
      continue;
    }
    if (line[0] == '#') {
      std::istringstream l(line);
      std::string hash, kind, name;
      l >> hash >> kind >> name;
      if (kind != "HELP" && kind != "TYPE") continue;  // a plain comment
      std::size_t p = 0;
      if (read_name(name, p, true) != name || name.empty()) {
        error(n, line, "bad metric name");
        continue;
      }
      const std::string prefix = "# " + kind + " " + name + " ";
      if (!line.starts_with(prefix) && line != "# " + kind + " " + name) {
        error(n, line, "malformed " + kind);
        continue;
      }
      const std::string rest = line.size() > prefix.size() ? line.substr(prefix.size()) : "";
      if (kind == "HELP") {
        if (out.help.count(name)) error(n, line, "second HELP");
        std::string h;
        for (std::size_t i = 0; i < rest.size(); ++i) {
          if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
            h += rest[i + 1] == 'n' ? '\n' : '\\';
            ++i;
          } else {
            h += rest[i];
          }
        }
        out.help[name] = h;
      } else {
        static const std::set<std::string> kinds = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!kinds.count(rest)) error(n, line, "unknown type");
        if (out.types.count(name)) error(n, line, "second TYPE");
        bool seen = false;
        for (const auto& s : out.samples) seen = seen || family_of(s.name, out.types) == name;
        if (seen) error(n, line, "TYPE after the family's samples");
        out.types[name] = rest;
      }
      continue;
    }
    PromSample s;
    std::size_t p = 0;
    s.name = read_name(line, p, true);
    if (s.name.empty()) {
      error(n, line, "no metric name");
      continue;
    }
    bool ok = true;
    if (p < line.size() && line[p] == '{') {
      ++p;
      while (ok && p < line.size() && line[p] != '}') {
        const auto label = read_name(line, p, false);
        if (label.empty() || p + 1 >= line.size() || line[p] != '=' || line[p + 1] != '"') {
          ok = false;
          break;
        }
        p += 2;
        std::string v;
        bool closed_quote = false;
        while (p < line.size()) {
          const char c = line[p++];
          if (c == '"') {
            closed_quote = true;
            break;
          }
          if (c == '\\') {
            if (p >= line.size()) break;
            const char e = line[p++];
            if (e == '\\') v += '\\';
            else if (e == '"') v += '"';
            else if (e == 'n') v += '\n';
            else {
              ok = false;
              break;
            }
          } else {
            v += c;
          }
        }
        if (!ok || !closed_quote || s.labels.count(label)) {
          ok = false;
          break;
        }
        s.labels[label] = v;
        if (p < line.size() && line[p] == ',') ++p;
      }
      if (!ok || p >= line.size() || line[p] != '}') {
        error(n, line, "malformed labels");
        continue;
      }
      ++p;
    }
    if (p >= line.size() || line[p] != ' ') {
      error(n, line, "no space before the value");
      continue;
    }
    ++p;
    const auto rest = line.substr(p);
    const auto sp = rest.find(' ');
    const auto value = parse_value(rest.substr(0, sp));
    if (!value) {
      error(n, line, "bad value");
      continue;
    }
    if (sp != std::string::npos && !std::regex_match(rest.substr(sp + 1), std::regex(R"(-?\d+)"))) {
      error(n, line, "bad timestamp");
      continue;
    }
    s.value = *value;
    const auto family = family_of(s.name, out.types);
    if (!out.types.count(family)) error(n, line, "no TYPE for " + family);
    if (!out.help.count(family)) error(n, line, "no HELP for " + family);
    if (family != current) {
      if (closed.count(family)) error(n, line, "samples of " + family + " are not contiguous");
      if (!current.empty()) closed.insert(current);
      current = family;
    }
    out.samples.push_back(std::move(s));
  }
  // Histograms: cumulative buckets, +Inf = _count, per series.
  for (const auto& [family, type] : out.types) {
    if (type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
    for (const auto& s : out.samples) {
      if (s.name != family + "_bucket") continue;
      auto labels = s.labels;
      auto le = labels.find("le");
      if (le == labels.end()) {
        out.errors.push_back(family + ": a bucket without le");
        continue;
      }
      const auto bound = parse_value(le->second);
      labels.erase(le);
      if (!bound) {
        out.errors.push_back(family + ": bad le " + le->second);
        continue;
      }
      buckets[labels].push_back({*bound, s.value});
    }
    for (const auto& [labels, bs] : buckets) {
      for (std::size_t i = 1; i < bs.size(); ++i) {
        if (!(bs[i - 1].first < bs[i].first) || bs[i - 1].second > bs[i].second) {
          out.errors.push_back(family + ": buckets not ascending and cumulative");
        }
      }
      if (bs.empty() || !std::isinf(bs.back().first)) {
        out.errors.push_back(family + ": no +Inf bucket");
        continue;
      }
      const auto count = out.value(family + "_count", labels);
      if (!count || *count != bs.back().second) out.errors.push_back(family + ": _count differs from the +Inf bucket");
      if (!out.value(family + "_sum", labels)) out.errors.push_back(family + ": no _sum");
    }
  }
  return out;
}

std::vector<const PromSample*> PromText::find(const std::string& name,
                                              const std::map<std::string, std::string>& labels) const {
  std::vector<const PromSample*> out;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      match = match && it != s.labels.end() && it->second == v;
    }
    if (match) out.push_back(&s);
  }
  return out;
}

std::optional<double> PromText::value(const std::string& name, const std::map<std::string, std::string>& labels) const {
  auto f = find(name, labels);
  if (f.size() != 1) return std::nullopt;
  return f.front()->value;
}

double PromText::sum(const std::string& name, const std::map<std::string, std::string>& labels) const {
  double total = 0;
  for (const auto* s : find(name, labels)) total += s->value;
  return total;
}

}  // namespace vigil::test
