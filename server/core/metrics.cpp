#include "server/core/metrics.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace vigil::server::metrics {
namespace {

bool valid_name(std::string_view n, bool colon_ok) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

const char* type_name(Type t) noexcept {
  switch (t) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
  }
  return "untyped";
}

void sample(std::string& out, const std::string& name, std::string_view suffix, const std::string& labels,
            std::string_view extra, const std::string& value) {
  out += name;
  out += suffix;
  if (!labels.empty() || !extra.empty()) {
    out += '{';
    out += labels;
    if (!labels.empty() && !extra.empty()) out += ',';
    out += extra;
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

std::string format_count(std::uint64_t v) { return std::to_string(v); }

}  // namespace

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()), buckets_(bounds.size() + 1) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (std::isnan(bounds_[i]) || (i > 0 && !(bounds_[i - 1] < bounds_[i]))) {
      throw std::invalid_argument("histogram bounds must be ascending numbers");
    }
  }
  if (!bounds_.empty() && std::isinf(bounds_.back()) && bounds_.back() > 0) {
    throw std::invalid_argument("histogram bounds: +Inf is implied");
  }
}

void Histogram::observe(double v) noexcept {
  std::size_t i = 0;
  while (i < bounds_.size() && !(v <= bounds_[i])) ++i;  // NaN lands in +Inf
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative.reserve(buckets_.size());
  std::uint64_t running = 0;
  for (const auto& b : buckets_) {
    running += b.load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

FamilyBase::FamilyBase(Type type, std::string name, std::string help, std::vector<std::string> labels)
    : type_(type), name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)) {
  if (!valid_name(name_, true)) throw std::invalid_argument("bad metric name '" + name_ + "'");
  for (const auto& l : labels_) {
    if (!valid_name(l, false) || l.starts_with("__") || (type_ == Type::histogram && l == "le")) {
      throw std::invalid_argument("bad label name '" + l + "' of metric " + name_);
    }
  }
}

void FamilyBase::check_arity(const std::vector<std::string>& values) const {
  if (values.size() != labels_.size()) {
    throw std::invalid_argument("metric " + name_ + " takes " + std::to_string(labels_.size()) + " label values");
  }
}

std::string FamilyBase::label_text(const std::vector<std::string>& values) const {
  std::string out;
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    if (i) out += ',';
    out += labels_[i];
    out += "=\"";
    out += escape_label_value(values[i]);
    out += '"';
  }
  return out;
}

void FamilyBase::render(std::string& out) const {
  out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
  out += "# TYPE " + name_ + " " + type_name(type_) + "\n";
  render_series(out);
}

template <class T>
T& Family<T>::with(const std::vector<std::string>& values) {
  check_arity(values);
  std::lock_guard lock(mu_);
  auto& slot = series_[values];
  if (!slot) {
    if constexpr (std::is_same_v<T, Histogram>) {
      slot = std::make_unique<Histogram>(bounds_);
    } else {
      slot = std::make_unique<T>();
    }
  }
  return *slot;
}

template <class T>
void Family<T>::remove(const std::vector<std::string>& values) {
  std::lock_guard lock(mu_);
  series_.erase(values);
}

template <>
void Family<Counter>::render_series(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, c] : series_) sample(out, name_, "", label_text(values), "", format_count(c->value()));
}

template <>
void Family<Gauge>::render_series(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, g] : series_) sample(out, name_, "", label_text(values), "", format_value(g->value()));
}

template <>
void Family<Histogram>::render_series(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, h] : series_) {
    const auto labels = label_text(values);
    const auto s = h->snapshot();
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
      sample(out, name_, "_bucket", labels, "le=\"" + format_value(bounds_[i]) + "\"", format_count(s.cumulative[i]));
    }
    sample(out, name_, "_bucket", labels, "le=\"+Inf\"", format_count(s.cumulative.back()));
    sample(out, name_, "_sum", labels, "", format_value(s.sum));
    sample(out, name_, "_count", labels, "", format_count(s.cumulative.back()));
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Registry::add(std::unique_ptr<FamilyBase> family) {
  std::lock_guard lock(mu_);
  for (const auto& f : families_) {
    if (f->name() == family->name()) throw std::invalid_argument("metric " + family->name() + " registered twice");
  }
  families_.push_back(std::move(family));
}

Family<Counter>& Registry::counter(std::string name, std::string help, std::vector<std::string> labels) {
  auto f = std::make_unique<Family<Counter>>(Type::counter, std::move(name), std::move(help), std::move(labels));
  auto& ref = *f;
  add(std::move(f));
  return ref;
}

Family<Gauge>& Registry::gauge(std::string name, std::string help, std::vector<std::string> labels) {
  auto f = std::make_unique<Family<Gauge>>(Type::gauge, std::move(name), std::move(help), std::move(labels));
  auto& ref = *f;
  add(std::move(f));
  return ref;
}

Family<Histogram>& Registry::histogram(std::string name, std::string help, std::vector<double> bounds,
                                       std::vector<std::string> labels) {
  Histogram check(bounds);  // validates the bounds now, not at first use
  auto f = std::make_unique<Family<Histogram>>(Type::histogram, std::move(name), std::move(help), std::move(labels),
                                               std::move(bounds));
  auto& ref = *f;
  add(std::move(f));
  return ref;
}

void Registry::on_collect(std::function<void()> hook) {
  std::lock_guard lock(mu_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::render() const {
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard lock(mu_);
    for (const auto& h : hooks_) h();
    for (const auto& f : families_) families.push_back(f.get());
  }
  std::string out;
  for (const auto* f : families) f->render(out);
  return out;
}

}  // namespace vigil::server::metrics
