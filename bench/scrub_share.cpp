#include "bench/scrub_share.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "admission/admission.hpp"
#include "admission/profiler.hpp"
#include "storage/background_broker.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace vigil::admission;

namespace vigil::bench {
namespace {

constexpr std::uint64_t kBlock = 4096;
constexpr std::uint64_t kSegmentBytes = 16ull << 20;  // a closed segment: one long sequential extent
constexpr std::size_t kSegments = 64;                 // the scrubber's set, spread over the disk

double s_of(Nanos t) { return std::chrono::duration<double>(t).count(); }

// A recording stream: each cycle one write of its rate, appended in its own region (its segments).
class RecordingStream final : public CycleStream {
 public:
  RecordingStream(std::uint64_t offset, std::uint64_t region, std::size_t bytes)
      : offset_(offset), region_(region), buf_(bytes) {}
  StreamIo prepare(std::uint64_t) override {
    if (pos_ + buf_.size() > region_) pos_ = 0;
    const std::uint64_t at = offset_ + pos_;
    pos_ += buf_.size();
    return {.write = true, .pieces = {{at, buf_.span()}}};
  }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_, region_, pos_ = 0;
  AlignedBuffer buf_;
};

}  // namespace

ScrubShareResult scrub_share_run(const ScrubShareOptions& options) {
  const Nanos T = std::chrono::seconds(1);
  // The profile as `vigil profile` measures it, on a disk of its own (virtual time).
  DiskProfile profile;
  {
    SimulatedHdd probe(hdd_preset("atlas10k"), kBlock);
    profile = profile_device(*probe.disk, probe.clock, {.quick = true, .seed = options.seed});
  }
  const ProfiledServiceModel service(profile);
  const AdmissionController adm(profile, {.policy = Policy::conservative, .cycle_s = s_of(T), .r_rt = 0.9});
  const Rate rate = Rate::from_Bps(options.stream_Bps);
  std::vector<StreamDemand> set;
  for (std::uint64_t id = 1;; ++id) {
    const StreamDemand d{.id = id, .write = true, .peak_rate = rate, .average_rate = rate};
    if (!adm.decide(set, d).admitted) break;
    set.push_back(d);
  }
  ScrubShareResult out;
  out.admissible = set.size();
  out.streams = static_cast<std::size_t>(std::floor(options.load * static_cast<double>(set.size())));

  SimulatedHdd hdd(hdd_preset("atlas10k"), kBlock);
  const auto chunk = std::max<std::size_t>(kBlock, static_cast<std::size_t>(profile.chunk_bytes()) / kBlock * kBlock);
  // vigild's scheduler settings (server/disks/disk_io.cpp): T = 1 s, r_RT = 0.9, the profile's
  // chunk, D = 2; the background budget is the option.
  CycleScheduler sched(
      *hdd.disk, hdd.clock, service,
      {.cycle = T, .r_rt = 0.9, .chunk_bytes = chunk, .depth = 2, .background_budget = options.background_budget},
      &hdd.clock);
  const std::uint64_t cap = hdd.capacity / kBlock * kBlock;
  // Streams and segments interleaved over the disk, as a filled volume's files are.
  const std::size_t regions = out.streams + kSegments;
  const std::uint64_t region = cap / std::max<std::size_t>(regions, 1) / kBlock * kBlock;
  const auto io_bytes = static_cast<std::size_t>(std::ceil(options.stream_Bps * s_of(T) / kBlock)) * kBlock;
  std::vector<std::unique_ptr<RecordingStream>> streams;
  std::vector<BrokerExtent> segments;
  const std::size_t stride = regions / std::max<std::size_t>(kSegments, 1);
  for (std::size_t r = 0, s = 0; r < regions; ++r) {
    const std::uint64_t at = r * region;
    if (segments.size() < kSegments && (r % std::max<std::size_t>(stride, 1) == stride / 2 || s >= out.streams)) {
      segments.push_back({at, std::min<std::uint64_t>(kSegmentBytes, region) / kBlock * kBlock});
      continue;
    }
    if (s < out.streams) {
      streams.push_back(std::make_unique<RecordingStream>(at, region, io_bytes));
      sched.add_stream(++s, *streams.back(), hdd.clock.now());
    }
  }

  BackgroundBroker broker(sched, chunk, kBlock);
  std::function<void()> epoch = [&] {
    // Rolling epochs: the set is read again as soon as it is done, so work always waits for slack.
    auto id = broker.register_read(
        segments, [](std::span<const std::byte>, std::uint64_t) {},
        [&](vigil::Result<void> r) {
          if (r) epoch();
        });
    if (!id) throw std::runtime_error("scrub task refused");
  };
  if (options.scrub) epoch();

  std::vector<Nanos> rt_done;
  sched.on_cycle = [&](const CycleReport& r) {
    const Nanos foreground = r.rt_busy + r.flush_busy;
    out.foreground_s += s_of(foreground);
    out.residual_s += s_of(T - foreground);
    out.scrub_busy_s += s_of(r.busy - foreground);  // nothing else runs: no interactive, no best effort
    rt_done.push_back(r.rt_done);
  };
  const Nanos start = hdd.clock.now();
  for (int c = 0; c < options.cycles; ++c) sched.run_cycle();
  out.elapsed_s = s_of(hdd.clock.now() - start);
  out.cycles = sched.totals().cycles;
  out.misses = sched.totals().misses;
  out.scrub_bytes = static_cast<double>(broker.bytes_read());
  std::sort(rt_done.begin(), rt_done.end());
  if (!rt_done.empty()) {
    const std::size_t k =
        std::min(rt_done.size() - 1, static_cast<std::size_t>(0.99 * static_cast<double>(rt_done.size())));
    out.rt_done_p99_ms = s_of(rt_done[k]) * 1e3;
    out.rt_done_max_ms = s_of(rt_done.back()) * 1e3;
  }
  return out;
}

}  // namespace vigil::bench
