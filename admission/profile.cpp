#include "admission/profile.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <stdexcept>

namespace vigil::admission {
namespace {

const std::vector<double>& column(const Curve& c, Which w) {
  return w == Which::min ? c.min : w == Which::mean ? c.mean : c.max;
}

boost::json::array to_array(const std::vector<double>& v) {
  boost::json::array a;
  for (double x : v) a.push_back(x);
  return a;
}

std::vector<double> from_array(const boost::json::value& v) {
  std::vector<double> out;
  for (const auto& x : v.as_array()) out.push_back(x.to_number<double>());
  return out;
}

boost::json::object curve_json(const Curve& c) {
  return {{"sizes", to_array(c.sizes)}, {"min", to_array(c.min)}, {"mean", to_array(c.mean)}, {"max", to_array(c.max)}};
}

Curve curve_from(const boost::json::object& o) {
  Curve c{from_array(o.at("sizes")), from_array(o.at("min")), from_array(o.at("mean")), from_array(o.at("max"))};
  const auto n = c.sizes.size();
  if (c.min.size() != n || c.mean.size() != n || c.max.size() != n) {
    throw std::invalid_argument("profile: a curve's columns differ in length");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!(c.sizes[i] > 0) || (i && c.sizes[i] <= c.sizes[i - 1])) {
      throw std::invalid_argument("profile: curve sizes must be positive and ascending");
    }
    if (!(c.min[i] > 0) || !(c.mean[i] > 0) || !(c.max[i] > 0)) {
      throw std::invalid_argument("profile: curve throughputs must be positive");
    }
  }
  return c;
}

}  // namespace

double throughput_at(const Curve& c, Which which, double size) noexcept {
  const auto& y = column(c, which);
  if (c.sizes.empty() || size <= 0) return 0;
  const auto& x = c.sizes;
  if (size <= x.front()) {
    // Access-bound below the first point: the IO costs at least what the smallest one did.
    return y.front() * size / x.front();
  }
  if (size >= x.back()) return y.back();
  const auto hi = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), size) - x.begin());
  const std::size_t lo = hi - 1;
  // Interpolate the time one IO takes, t(S) = S / P(S), linearly in S: between two measured
  // sizes the access cost and the media rate are what they were at the ends, so t is a straight
  // line there (exact for S / (T_access + S/R)). Interpolating P itself bends the wrong way and
  // makes the model pessimistic between points.
  const double t_lo = x[lo] / y[lo], t_hi = x[hi] / y[hi];
  const double f = (size - x[lo]) / (x[hi] - x[lo]);
  return size / (t_lo + f * (t_hi - t_lo));
}

ChunkRange near_peak_range(const Curve& seq, double tolerance) noexcept {
  ChunkRange r;
  if (seq.empty()) return r;
  r.peak = *std::max_element(seq.mean.begin(), seq.mean.end());
  bool found = false;
  for (std::size_t i = 0; i < seq.sizes.size(); ++i) {
    if (seq.mean[i] >= (1 - tolerance) * r.peak) {
      if (!found) r.a = seq.sizes[i];
      r.b = seq.sizes[i];
      found = true;
    }
  }
  return r;
}

double DiskProfile::chunk_bytes() const noexcept {
  const double a = write_range.a > 0 ? write_range.a : read_range.a;
  const double block = block_bytes ? block_bytes : 4096;
  return std::max(block, std::ceil(a / block) * block);
}

Rate DiskProfile::peak_rate() const noexcept {
  return Rate::from_Bps(std::max({read_range.peak, write_range.peak, 0.0}));
}

Rate DiskProfile::slowest_rate() const noexcept {
  // The worst run of the largest random IOs: 16 MiB at random places, so slow zones and an
  // access per IO included — a safe stand-in for the slowest zone's media rate.
  double r = 0;
  for (const Curve* c : {&random_read, &random_write}) {
    if (c->empty()) continue;
    const double v = c->min.back();
    r = r == 0 ? v : std::min(r, v);
  }
  return Rate::from_Bps(r);
}

boost::json::value to_json(const DiskProfile& p) {
  return boost::json::object{
      {"format", p.format},
      {"device", p.device},
      {"device_bytes", p.device_bytes},
      {"block_bytes", p.block_bytes},
      {"measured_at_us", p.measured_at_us},
      {"tool_version", p.tool_version},
      {"quick", p.quick},
      {"random_read", curve_json(p.random_read)},
      {"random_write", curve_json(p.random_write)},
      {"seq_read", curve_json(p.seq_read)},
      {"seq_write", curve_json(p.seq_write)},
      {"read_range", {{"a", p.read_range.a}, {"b", p.read_range.b}, {"peak", p.read_range.peak}}},
      {"write_range", {{"a", p.write_range.a}, {"b", p.write_range.b}, {"peak", p.write_range.peak}}},
      {"command_overhead_s", p.command_overhead_s},
      {"access_mean_s", p.access_mean_s},
      {"access_max_s", p.access_max_s},
      {"jitter_p50_s", p.jitter_p50_s},
      {"jitter_p99_s", p.jitter_p99_s},
      {"cycle_io_sd_s", p.cycle_io_sd_s},
      {"sustained_write", to_array(p.sustained_write)},
  };
}

DiskProfile profile_from_json(const boost::json::value& v) {
  try {
    const auto& o = v.as_object();
    DiskProfile p;
    p.format = static_cast<int>(o.at("format").to_number<std::int64_t>());
    if (p.format != kProfileFormat) {
      throw std::invalid_argument("profile format " + std::to_string(p.format) + " is not supported (expected " +
                                  std::to_string(kProfileFormat) + "); run `vigil profile` again");
    }
    p.device = std::string(o.at("device").as_string());
    p.device_bytes = o.at("device_bytes").to_number<std::uint64_t>();
    p.block_bytes = o.at("block_bytes").to_number<std::uint32_t>();
    p.measured_at_us = o.at("measured_at_us").to_number<std::int64_t>();
    p.tool_version = std::string(o.at("tool_version").as_string());
    p.quick = o.at("quick").as_bool();
    p.random_read = curve_from(o.at("random_read").as_object());
    p.random_write = curve_from(o.at("random_write").as_object());
    p.seq_read = curve_from(o.at("seq_read").as_object());
    p.seq_write = curve_from(o.at("seq_write").as_object());
    for (auto [key, range] : {std::pair{"read_range", &p.read_range}, std::pair{"write_range", &p.write_range}}) {
      const auto& r = o.at(key).as_object();
      *range = {r.at("a").to_number<double>(), r.at("b").to_number<double>(), r.at("peak").to_number<double>()};
    }
    p.command_overhead_s = o.at("command_overhead_s").to_number<double>();
    p.access_mean_s = o.at("access_mean_s").to_number<double>();
    p.access_max_s = o.at("access_max_s").to_number<double>();
    p.jitter_p50_s = o.at("jitter_p50_s").to_number<double>();
    p.jitter_p99_s = o.at("jitter_p99_s").to_number<double>();
    if (const auto* sd = o.if_contains("cycle_io_sd_s")) p.cycle_io_sd_s = sd->to_number<double>();  // optional
    p.sustained_write = from_array(o.at("sustained_write"));
    if (p.random_read.empty() && p.random_write.empty()) throw std::invalid_argument("profile: no admission curve");
    return p;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("profile: malformed document: ") + e.what());
  }
}

}  // namespace vigil::admission
