// Service time against LBN distance on the real device, and what a learned map's order buys there
// (bench/device_distance.hpp).
#include "bench/device_distance.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "bench/percentile.hpp"
#include "storage/device.hpp"
#include "storage/latency_map.hpp"
#include "storage/request_order.hpp"

namespace vigil::bench {
namespace {

using Steady = std::chrono::steady_clock;
using storage::AlignedBuffer;
using storage::Nanos;
constexpr std::uint64_t kBlock = 4096;
constexpr std::uint64_t kMiB = 1 << 20;

std::runtime_error sys_error(const std::string& what, const std::filesystem::path& path) {
  return std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

// Owns the O_DIRECT descriptor and the one aligned block every read lands in.
class DirectReader {
 public:
  explicit DirectReader(const std::filesystem::path& path)
      : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC)), buf_(kBlock) {
    if (fd_ < 0) throw sys_error("cannot open", path);
  }
  ~DirectReader() { ::close(fd_); }
  DirectReader(const DirectReader&) = delete;
  DirectReader& operator=(const DirectReader&) = delete;

  // One read, timed on the monotonic clock from submission to completion.
  Nanos read(std::uint64_t offset) {
    const auto t0 = Steady::now();
    if (::pread(fd_, buf_.data(), kBlock, static_cast<off_t>(offset)) != static_cast<ssize_t>(kBlock)) {
      throw sys_error("read failed on", path_);
    }
    return std::chrono::duration_cast<Nanos>(Steady::now() - t0);
  }

 private:
  std::filesystem::path path_;
  int fd_;
  AlignedBuffer buf_;
};

// A file shorter than the region is written in full with 1 MiB O_DIRECT writes (an unwritten
// extent would be answered from the file system's metadata); returns MB/s, or 0 when nothing was
// written (a block device, or a file already long enough from an earlier run).
double prepare_region(const std::filesystem::path& path, std::uint64_t region_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) return 0;
  if (::stat(path.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= region_bytes) return 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0640);
  if (fd < 0) throw sys_error("cannot create", path);
  AlignedBuffer buf(kMiB);
  std::memset(buf.data(), 0x5a, kMiB);
  const auto t0 = Steady::now();
  for (std::uint64_t off = 0; off < region_bytes; off += kMiB) {
    if (::pwrite(fd, buf.data(), kMiB, static_cast<off_t>(off)) != static_cast<ssize_t>(kMiB)) {
      ::close(fd);
      throw sys_error("cannot write", path);
    }
  }
  ::fdatasync(fd);
  ::close(fd);
  return static_cast<double>(region_bytes) / 1e6 / std::chrono::duration<double>(Steady::now() - t0).count();
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= n, my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx == 0 || syy == 0 ? 0 : sxy / std::sqrt(sxx * syy);
}

double us(Nanos t) { return static_cast<double>(t.count()) / 1e3; }

// Q synchronous readers over POSITIONS, served by ORDER for COMPLETIONS reads; ops/s. The map
// keeps learning from every completion, as it would in vigild.
double serve_queue(DirectReader& dev, storage::LatencyMap& map, const storage::ServiceTimePredictor* order,
                   const std::vector<std::uint64_t>& positions, int queue_depth, int completions, std::mt19937_64& rng,
                   std::uint64_t& head) {
  std::vector<storage::PendingIo> queue;
  auto next = [&] { return storage::PendingIo{positions[rng() % positions.size()], kBlock, std::nullopt}; };
  for (int i = 0; i < queue_depth; ++i) queue.push_back(next());
  std::vector<storage::PendingIo> batch;  // FSATF: the frozen round, served from the back
  Nanos busy{0};
  for (int i = 0; i < completions; ++i) {
    storage::PendingIo r;
    if (order == nullptr) {
      r = queue.front();
      queue.erase(queue.begin());
    } else {
      if (batch.empty()) {
        for (std::size_t k : storage::order_nearest_insertion(head, queue, *order)) batch.push_back(queue[k]);
        std::reverse(batch.begin(), batch.end());
        queue.clear();
      }
      r = batch.back();
      batch.pop_back();
    }
    const Nanos t = dev.read(r.offset);
    map.update(head, r.offset, t);
    head = r.offset + r.bytes;
    busy += t;
    queue.push_back(next());
  }
  return completions / (static_cast<double>(busy.count()) / 1e9);
}

}  // namespace

DeviceDistanceResult measure_device_distance(const DeviceDistanceParams& p) {
  DeviceDistanceResult out;
  out.prefill_mb_per_s = prepare_region(p.path, p.region_bytes);
  DirectReader dev(p.path);
  std::mt19937_64 rng(20261126);
  const std::uint64_t blocks = p.region_bytes / kBlock;
  std::uniform_int_distribution<std::uint64_t> block(0, blocks - 1);
  std::uniform_real_distribution<double> log_distance(std::log(double(kBlock)), std::log(double(p.region_bytes)));

  // Distance: A untimed (places the "head"), then B at ±d timed.
  std::vector<double> distance_bytes, time_us;
  for (int i = 0; i < p.distance_samples; ++i) {
    const std::uint64_t a = block(rng) * kBlock;
    // Whichever way fits (both: a coin); a distance that fits neither way is cut to the longer side.
    const std::uint64_t room_forward = p.region_bytes - kBlock - a;
    std::uint64_t d = static_cast<std::uint64_t>(std::exp(log_distance(rng))) / kBlock * kBlock;
    d = std::min(d, std::max(room_forward, a));
    const bool forward = d <= room_forward && (d > a || (rng() & 1) != 0);
    const std::uint64_t b = forward ? a + d : a - d;
    dev.read(a);
    distance_bytes.push_back(static_cast<double>(d));
    time_us.push_back(us(dev.read(b)));
  }
  out.pearson_r = pearson(distance_bytes, time_us);
  out.median_us = percentile(time_us, 0.50);
  for (std::uint64_t from = kBlock; from < p.region_bytes; from *= 10) {
    std::vector<double> in;
    for (std::size_t i = 0; i < distance_bytes.size(); ++i) {
      if (distance_bytes[i] >= double(from) && distance_bytes[i] < double(from) * 10) in.push_back(time_us[i]);
    }
    if (in.empty()) continue;
    out.decades.push_back({from, static_cast<int>(in.size()), percentile(in, 0.50), percentile(in, 0.99)});
  }

  // What the map buys: learn every ordered pair once, then FCFS and FSATF-MAP in alternating rounds.
  std::vector<std::uint64_t> positions;
  for (int i = 0; i < p.map_positions; ++i) positions.push_back(block(rng) * kBlock);
  storage::LatencyMap map(p.region_bytes, 128 * 1024);
  for (std::uint64_t a : positions) {
    for (std::uint64_t b : positions) {
      dev.read(a);
      map.update(a + kBlock, b, dev.read(b));
    }
  }
  out.map_cells = map.learned_cells();
  storage::LbnDistancePredictor lbn(Nanos{100'000}, 1e-9);  // for a cell the pairs did not reach
  storage::MapPredictor by_map(map, lbn);
  std::uint64_t head = 0;
  constexpr int kRounds = 10;
  double fcfs = 0, fsatf = 0;
  for (int round = 0; round < kRounds; ++round) {
    fcfs += serve_queue(dev, map, nullptr, positions, p.queue_depth, p.order_completions / kRounds, rng, head);
    fsatf += serve_queue(dev, map, &by_map, positions, p.queue_depth, p.order_completions / kRounds, rng, head);
  }
  out.fcfs_ops_per_s = fcfs / kRounds;
  out.fsatf_map_ops_per_s = fsatf / kRounds;
  return out;
}

}  // namespace vigil::bench
