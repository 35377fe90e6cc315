#pragma once
// A small metrics registry for GET /metrics (docs/metrics.md): counters, gauges and histograms
// with labels, rendered in the Prometheus text exposition format, version 0.0.4. Deliberately
// not a general Prometheus client: no summaries, no exemplars; a series is removed only where
// nobody holds it (Family::remove).
// Thread: updating a Counter, Gauge or Histogram is lock-free (relaxed atomics) from any
// thread, a disk's IO thread included. Family::with() (finding or creating a labelled series)
// and Registry::render() take that family's mutex, so hot paths look their series up once and
// keep the reference: series they hold are never removed and stay valid as long as the registry.
// Collect hooks run at the start of every render(), on the rendering (HTTP) thread.
// Errors: a bad metric or label name, a name registered twice, or the wrong number of label
// values throw std::invalid_argument (programming errors, found at start-up).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace vigil::server::metrics {

class Counter {
 public:
  void inc(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  // Mirrors a monotonic total that one thread owns (the scheduler's totals, for instance).
  void store(std::uint64_t total) noexcept { value_.store(total, std::memory_order_relaxed); }
  std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class Gauge {
 public:
  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void add(double d) noexcept { value_.fetch_add(d, std::memory_order_relaxed); }
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Buckets by upper bound (ascending; +Inf is implied). A value goes in the first bucket whose
// bound is ≥ it (Prometheus' `le`).
class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds);
  void observe(double v) noexcept;

  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
  };
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const noexcept { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<std::uint64_t>> buckets_;  // bounds_.size() + 1, not cumulative
  std::atomic<double> sum_{0};
};

enum class Type { counter, gauge, histogram };

class FamilyBase {
 public:
  FamilyBase(Type type, std::string name, std::string help, std::vector<std::string> labels);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;
  const std::string& name() const noexcept { return name_; }
  // HELP, TYPE and every series of the family.
  void render(std::string& out) const;

 protected:
  virtual void render_series(std::string& out) const = 0;
  // `a="x",b="y"` with escaped values (no braces), empty for a family without labels.
  std::string label_text(const std::vector<std::string>& values) const;
  void check_arity(const std::vector<std::string>& values) const;

  Type type_;
  std::string name_, help_;
  std::vector<std::string> labels_;
};

template <class T>
class Family final : public FamilyBase {
 public:
  Family(Type type, std::string name, std::string help, std::vector<std::string> labels,
         std::vector<double> bounds = {})
      : FamilyBase(type, std::move(name), std::move(help), std::move(labels)), bounds_(std::move(bounds)) {}

  // The series with these label values (in the family's label order), created at first use.
  T& with(const std::vector<std::string>& values);
  // Drops the series with these label values (gone from the next render). Only for series nobody
  // keeps a reference to: those looked up with with() each time they are set (a camera's up gauge
  // once the camera is removed).
  void remove(const std::vector<std::string>& values);

 protected:
  void render_series(std::string& out) const override;

 private:
  std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_;  // guarded by mu_
};

// Defined in metrics.cpp, the only place these families are instantiated.
template <>
void Family<Counter>::render_series(std::string& out) const;
template <>
void Family<Gauge>::render_series(std::string& out) const;
template <>
void Family<Histogram>::render_series(std::string& out) const;
extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

class Registry {
 public:
  Family<Counter>& counter(std::string name, std::string help, std::vector<std::string> labels = {});
  Family<Gauge>& gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  Family<Histogram>& histogram(std::string name, std::string help, std::vector<double> bounds,
                               std::vector<std::string> labels = {});
  // HOOK runs before each render (under the registry's mutex: it must not register metrics),
  // for gauges computed from state the hot paths do not publish.
  void on_collect(std::function<void()> hook);

  // Every family in registration order, in the exposition format (text/plain; version=0.0.4).
  std::string render() const;

 private:
  void add(std::unique_ptr<FamilyBase> family);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;  // guarded by mu_
  std::vector<std::function<void()>> hooks_;           // guarded by mu_
};

// Exposition helpers, exposed for the format tests.
std::string format_value(double v);                  // shortest round-trip; NaN, +Inf, -Inf
std::string escape_label_value(std::string_view v);  // \ " and newline
std::string escape_help(std::string_view v);         // \ and newline

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace vigil::server::metrics
